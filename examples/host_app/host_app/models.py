"""The host's own models: its own declarative base, its own tables, one foreign key to a mind."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from waggle_store.models import MindRow


class HostBase(DeclarativeBase):
    metadata = MetaData()


class User(HostBase):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(200), unique=True)


class Note(HostBase):
    """A note of a user, filed under one of waggle_store's minds.

    ``ForeignKey(MindRow.id)`` names ``waggle.waggle_minds``: on PostgreSQL it resolves in
    waggle_store's schema (its ``schema_translate_map`` when the store lives elsewhere); on SQLite,
    which cannot declare a key across schemas, SQLAlchemy leaves it out of ``create_all``.
    """

    __tablename__ = "notes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey(User.id, ondelete="CASCADE"))
    mind_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey(MindRow.id, ondelete="CASCADE")
    )
    body: Mapped[str] = mapped_column(Text)
