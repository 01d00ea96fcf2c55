"""The built-in sample conversation the demo cognifies (no files, no network)."""

from __future__ import annotations

SAMPLE_CONVERSATION: tuple[str, ...] = (
    "Kickoff: Sarah Chen leads Project Apollo, our new on-device search feature.",
    "Marcus Webb joined the Apollo team as the backend engineer; he prefers PostgreSQL over MySQL.",
    ("Decision: Apollo will ship on SQLite first and move to PostgreSQL when a customer outgrows "
     "one machine."),
    "The user prefers TypeScript over JavaScript for the desktop client.",
    "Priya Nair manages the design system and reviews every Apollo screen.",
    "The Q2 launch for Apollo is planned for May 14 in Zürich, at the partner conference.",
    "Risk: the embedding model download is 90 MB; offline installs need the model bundled.",
    "Marcus measured search latency at 4 ms p50 over 10,000 memories on a laptop.",
    "The plan for the Zürich launch was approved by Sarah Chen on Monday.",
    "Follow-up: send the e-mail about the beta programme to the node.js SDK users.",
    "Project Hermes is the internal analytics dashboard; Priya Nair leads it.",
    "Hermes depends on the Apollo search API for its query box.",
    "Temporary note: the staging server is down until Friday for a disk upgrade.",
    "The team agreed that memories older than a year are summarised, never deleted.",
    "Customer Acme Corp asked for an on-premise deployment of Apollo with PostgreSQL.",
    "Sarah Chen reports to Elena Rossi, the VP of Engineering.",
    "Elena Rossi approved the Q3 budget for two more engineers on Apollo.",
    "Marcus fixed the bug where accented words like café and Zürich were not searchable.",
    "The retro concluded that the Apollo launch checklist must include a load test.",
    "Reminder: the user likes short answers with code examples in Python.",
)

SAMPLE_QUERIES: tuple[str, ...] = (
    "Who leads Project Apollo?",
    "When and where is the launch?",
    "Which database does Marcus prefer?",
    "What did the user say about programming languages?",
)
