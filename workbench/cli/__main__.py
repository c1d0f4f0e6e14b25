"""``python -m workbench.cli`` (as torchrun launches it): the ``workbench`` command."""
import sys

from . import main

sys.exit(main())
