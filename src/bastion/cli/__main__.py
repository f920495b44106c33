"""``python -m bastion.cli``: the same as the ``bastion`` command."""

from ._app import main

main()
