from memctl.entry import main

main()
