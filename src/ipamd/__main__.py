import sys

from ipamd.cli import main

sys.exit(main())
