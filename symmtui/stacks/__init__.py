"""Where every process of a server's tree is: py-spy stacks, collapsed per rank, with the phase and hints."""
