import ArgumentParser
import BearerdCLI

/// The process entry point: parses the command line and runs the chosen command.
@main
extension Bearerd {}
