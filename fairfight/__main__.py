"""`python -m fairfight`: the same as the `fairfight` command (for a checkout that is not installed)."""

import sys

from fairfight.cli import main

if __name__ == "__main__":
    sys.exit(main())
