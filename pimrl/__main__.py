from pimrl.cli import main

raise SystemExit(main())
