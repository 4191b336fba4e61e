"""`python -m fairfight`: the same as the `fairfight` command (for a checkout that is not installed)."""

from fairfight.cli import main

if __name__ == "__main__":
    from runners import lifetime

    lifetime.leave(main())  # not sys.exit: native thread pools torn down at exit can abort it (lifetime.leave)
