"""``python -m labrys``: the command line."""
from .cli.main import main

raise SystemExit(main())
