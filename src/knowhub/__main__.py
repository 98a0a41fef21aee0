"""``python -m knowhub ...``: the same as the ``knowhub`` console script."""

from knowhub.cli.app import main

if __name__ == "__main__":
    main()
