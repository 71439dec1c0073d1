from facecache.cli import main

raise SystemExit(main())
