from wrighty.cli.app import main

main()
