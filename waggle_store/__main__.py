import sys

from waggle_store.cli import main

sys.exit(main())
