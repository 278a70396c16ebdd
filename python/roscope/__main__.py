try:
    from roscope.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command's modules are imported
    raise SystemExit(130) from None

raise SystemExit(main())
