"""Word lists of the rule-based extractor, as Waggle's extractor has them.

They live apart from the matching code so that a reviewer can diff them against Waggle's
constant by constant; changing one changes which entities every existing memory would yield.
"""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    """The words of a whitespace-separated block (lists stay diffable against Waggle's)."""
    return tuple(text.split())


# Lowercase tokens that name a technology (confidence 0.9).
TECH_TERMS: frozenset[str] = frozenset(
    _words(
        """
        javascript typescript python rust go java ruby react vue angular svelte nextjs nuxt
        node nodejs deno bun postgresql postgres sqlite mysql mongodb redis qdrant docker
        kubernetes aws gcp azure git github gitlab fastify express flask django tauri electron
        graphql rest grpc openai anthropic litellm claude gpt vitest jest pytest drizzle prisma
        sequelize bullmq clerk stripe webpack vite esbuild rollup
        """
    )
)

# Not in Waggle. Suffixes that make "<term>.<suffix>" one technology name: "node.js" is
# Node.js, not Node.
DOTTED_TECH_SUFFIXES: frozenset[str] = frozenset({"js"})

# A capitalised run whose first word is one of these is dropped whole (Waggle's skip rule,
# which is why "The Current Situation" yields nothing).
SKIP_WORDS: frozenset[str] = frozenset(
    _words(
        """
        The This That These What When Where Which Who How Why And But For Not You Your They
        Has Have Was Were Are Will Would Could Should Can May Let Use Set Get Run Add See Also
        Just Now Here Then All Any Each Some Yes Hi Hey Thanks Please Sorry Sure Switch Error
        """
    )
)

# Not in Waggle. Words that are capitalised only because they open a sentence (adverbs,
# connectives, prepositions, pronouns, greetings) and so are never the first word of a name.
# They are stripped from the front of a run, so "Yesterday Project Apollo" names Project
# Apollo. Words that can
# begin a real name (months, weekdays, "Mark", "Will", ...) are deliberately absent.
LEADING_FILLER_WORDS: frozenset[str] = frozenset(
    _words(
        """
        Yesterday Today Tomorrow Tonight Recently Currently Previously Later Earlier Soon
        Afterwards Meanwhile Eventually Finally Lastly Firstly Secondly Initially Originally
        Ultimately Again Already Still Last Next Since Until Once While After Before During
        Throughout However Therefore Thus Hence Moreover Furthermore Additionally Besides
        Instead Otherwise Anyway Nevertheless Nonetheless Consequently Accordingly Indeed
        Overall Basically Actually Apparently Unfortunately Fortunately Hopefully Obviously
        Clearly Perhaps Maybe Probably Certainly Definitely Honestly Seriously Interestingly
        Importantly Notably Ideally Personally Similarly Likewise Alternatively Specifically
        Generally Usually Normally Often Sometimes Always Never Only Even Well Ok Okay So
        Because Although Though If Unless Whether Whereas As
        In On At By From With Without Of To Into Onto Via Per About Above Across Against Along
        Among Around Behind Below Beside Between Beyond Despite Inside Near Over Through Toward
        Towards Under Unlike Upon Within Regarding
        We He She It Its Our Ours My Mine His Her Hers Their Theirs Them Us Me Him Those
        Another Both Either Neither Every Few Many Most Much Several Such Same An There
        Is Do Does Did Had Be Been Must Might Shall Need Remember Note Ask Tell Told Asked Said
        Met Talked Spoke Hello Oh Ah Um Dear Btw Fyi
        """
    )
)

PERSON_FIRST_NAMES: frozenset[str] = frozenset(
    _words(
        """
        james john robert michael david william richard joseph thomas charles mary patricia
        jennifer linda elizabeth barbara susan jessica sarah karen daniel matthew anthony mark
        donald steven paul andrew joshua kenneth maria anna lisa nancy betty margaret sandra
        ashley emily donna alice alex sam chris jordan taylor casey morgan riley jamie drew
        marko ana mia stefan nikola elena ivan peter georg hans
        """
    )
)

# Whole words (case-insensitive) anywhere in the name mark an organisation.
ORG_INDICATORS: tuple[str, ...] = _words(
    """
    inc corp ltd llc gmbh group company foundation institute university team department
    ministry agency council board association partnership venture capital lab labs studio
    consulting
    """
)

# Whole words (case-insensitive) anywhere in the name mark a concept.
CONCEPT_INDICATORS: tuple[str, ...] = _words(
    """
    analysis assessment review strategy planning framework methodology approach decision
    pattern principle design optimization evaluation implementation migration integration
    configuration architecture pipeline workflow summary overview comparison benchmark audit
    standard guideline requirement specification matrix model protocol phase milestone roadmap
    """
)

# A name that starts with one of these words (case-insensitive) is a project.
PROJECT_INDICATORS: tuple[str, ...] = _words(
    "project initiative program campaign operation mission sprint milestone phase version"
)
