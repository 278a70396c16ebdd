from roscope.cli import main

raise SystemExit(main())
