from grokslt.cli import main

main()
