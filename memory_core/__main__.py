import sys

from memory_core.cli.entry import main

sys.exit(main())
