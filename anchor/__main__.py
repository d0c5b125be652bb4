from anchor.cli import main

main()
