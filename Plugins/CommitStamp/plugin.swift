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
        // The git directory: `.git`, or where a worktree's or submodule's `.git` file points;
        // its refs may live in the common directory (`commondir`).
        var git = root.appending(path: ".git")
        if let link = try? String(contentsOf: git, encoding: .utf8), link.hasPrefix("gitdir: ") {
            let path = link.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespacesAndNewlines)
            git = path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appending(path: path)
        }
        var common = git
        if let text = try? String(contentsOf: git.appending(path: "commondir"), encoding: .utf8) {
            let path = text.trimmingCharacters(in: .whitespacesAndNewlines)
            common = path.hasPrefix("/") ? URL(fileURLWithPath: path) : git.appending(path: path)
        }
        var inputs = [
            root.appending(path: ".bearerd-commit"), git.appending(path: "HEAD"), git.appending(path: "logs/HEAD"),
            common.appending(path: "packed-refs"),
        ]
        // The branch's own ref file changes at each commit.
        if let head = try? String(contentsOf: git.appending(path: "HEAD"), encoding: .utf8), head.hasPrefix("ref: ") {
            let ref = head.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)
            inputs += [git.appending(path: ref), common.appending(path: ref)]
        }
        inputs = inputs.filter { FileManager.default.fileExists(atPath: $0.path) }
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
