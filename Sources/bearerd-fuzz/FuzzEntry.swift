import BearerdFuzzTargets
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// libFuzzer's entry point: `scripts/fuzz` builds this with `--sanitize=fuzzer`, whose runtime
// supplies `main`, and with BEARERD_FUZZING, which leaves out the replay `main` below. The
// target comes from BEARERD_FUZZ_TARGET.

enum Chosen {
    /// Read once, at the first input.
    static let target: FuzzTarget = {
        let name = getenv("BEARERD_FUZZ_TARGET").map { String(cString: $0) } ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            fatalError("set BEARERD_FUZZ_TARGET to one of: \(names)")
        }
        return target
    }()
}

/// libFuzzer's entry point: one input, run through the target BEARERD_FUZZ_TARGET names. Public:
/// libFuzzer's main, linked into this executable, calls it by its C name.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    _ = Chosen.target.run(count == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: count)))
    return 0
}

#if !BEARERD_FUZZING
/// Without libFuzzer: `bearerd-fuzz TARGET FILE...` runs files through a target and says how
/// each was taken, to replay an input without the sanitizers.
@main
enum Replay {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let chosen = FuzzTarget(rawValue: arguments[1]) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("usage: bearerd-fuzz TARGET FILE... (targets: \(names))\n".utf8))
            exit(2)
        }
        for path in arguments.dropFirst(2) {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(1)
            }
            print("\(path): \(chosen.run([UInt8](data)))")
        }
    }
}
#endif
