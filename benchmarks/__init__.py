"""Bastion's benchmark suite: Bastion, a hand-rolled asyncio floor and four peer frameworks.

Run ``python -m benchmarks`` (or ``make bench``); see ``benchmarks/README.md``.
"""
