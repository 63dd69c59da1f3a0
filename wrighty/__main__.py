from wrighty.cli.entry import main

main()
