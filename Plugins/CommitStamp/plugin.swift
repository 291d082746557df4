import Foundation
import PackagePlugin

/// Writes the commit a build is made from into BearerdCLI (`bearerd version`): in every build of
/// a git checkout, not only the package's. The command runs again when HEAD moves (its log, the
/// branch's ref, packed refs) or when `scripts/package` writes `.bearerd-commit` into the copy
/// of the sources it builds from (which has no .git).
@main
struct CommitStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "BearerdVersion+GitCommit.swift")
        let candidates = [
            ".bearerd-commit", ".git/HEAD", ".git/logs/HEAD", ".git/packed-refs", ".git/refs/heads",
        ]
        var inputs = candidates.map { root.appending(path: $0) }.filter {
            FileManager.default.fileExists(atPath: $0.path)
        }
        // The branch's own ref file changes at each commit.
        if let head = try? String(contentsOf: root.appending(path: ".git/HEAD"), encoding: .utf8),
            head.hasPrefix("ref: ")
        {
            let ref = root.appending(path: ".git/" + head.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
            if FileManager.default.fileExists(atPath: ref.path) { inputs.append(ref) }
        }
        return [
            .buildCommand(
                displayName: "Stamping the git commit into bearerd version",
                executable: try context.tool(named: "bearerd-commit-stamp").url,
                arguments: [root.path, output.path],
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
