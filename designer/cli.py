"""The ``fabric-designer`` command (placeholder until the CLI lands)."""


def main(argv=None) -> int:
    print("fabric-designer: the command line is being built")
    return 0
