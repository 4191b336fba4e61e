"""`python -m generator.commands.compare A B`: the same as `fairfight compare A B`."""

import argparse
import sys

from generator.commands.compare import add_cli_args, main

parser = argparse.ArgumentParser(prog="python -m generator.commands.compare")
add_cli_args(parser)
sys.exit(main(parser.parse_args()))
