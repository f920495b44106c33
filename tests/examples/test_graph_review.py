"""The durable review graph example: it suspends on the editor's approval and resumes."""

from __future__ import annotations

from pathlib import Path

from examples.graph_review import PUBLISHED, main


async def test_the_review_graph_suspends_and_a_fresh_graph_completes_it(tmp_path: Path) -> None:
    before = len(PUBLISHED)
    result = await main(f"sqlite:///{tmp_path / 'review.db'}")
    assert result.status == "completed"
    assert result.output == {
        "editor": "Published after review: 117 characters live",
        "published": before + 1,
    }
    assert PUBLISHED[-1].splitlines() == [
        "A paragraph on why durable graphs.",
        "A paragraph on how durable graphs work.",
        "A paragraph on when to use durable graphs.",
    ]
