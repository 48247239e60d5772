"""``python -m wblab ARGS``: the ``wblab`` command line, from the package."""

import sys

from . import _wblab


def main() -> int:
    return _wblab.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
