import sys

from memory_core.cli.main import main

sys.exit(main())
