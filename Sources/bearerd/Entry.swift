import ArgumentParser
import BearerdCLI

/// The process entry point: hardens the process, then parses the command line and runs the
/// chosen command.
@main
enum Entry {
    static func main() async {
        ProcessHardening.apply()
        await Bearerd.main()
    }
}
