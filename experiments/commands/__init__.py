"""Sub-commands of the ``mdcert`` CLI; each module defines HELP, configure(parser) and run(args)."""
