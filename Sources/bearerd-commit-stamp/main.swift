import Foundation

// bearerd-commit-stamp PACKAGE_DIR OUTPUT: writes `BearerdVersion.commit` into OUTPUT (only
// when it changes, so a build without a new commit recompiles nothing). The commit is
// PACKAGE_DIR/.bearerd-commit when it exists (scripts/package writes it, with "-dirty" when
// the tree had changes), else HEAD of PACKAGE_DIR's git checkout (a worktree's `.git` file
// followed, packed refs read), shortened to 12 digits; "unknown" outside a checkout. git itself
// is not run: a build must not depend on it being installed.

func read(_ path: String) -> String? {
    (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
}

func gitDirectory(_ root: String) -> String? {
    let dotGit = root + "/.git"
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: dotGit, isDirectory: &isDirectory) else { return nil }
    if isDirectory.boolValue { return dotGit }
    // A worktree or submodule: "gitdir: PATH".
    guard let text = read(dotGit), text.hasPrefix("gitdir: ") else { return nil }
    let path = String(text.dropFirst("gitdir: ".count))
    return path.hasPrefix("/") ? path : root + "/" + path
}

func resolve(_ reference: String, in git: String) -> String? {
    if let hash = read(git + "/" + reference) { return hash }
    // A worktree keeps its HEAD apart, and the refs in the common directory.
    if let common = read(git + "/commondir") {
        let directory = common.hasPrefix("/") ? common : git + "/" + common
        if let hash = read(directory + "/" + reference) { return hash }
        return packed(reference, in: directory)
    }
    return packed(reference, in: git)
}

func packed(_ reference: String, in git: String) -> String? {
    guard let text = read(git + "/packed-refs") else { return nil }
    for line in text.split(separator: "\n") where line.hasSuffix(" " + reference) {
        return String(line.prefix { $0 != " " })
    }
    return nil
}

func commit(_ root: String) -> String {
    if let stamped = read(root + "/.bearerd-commit"), !stamped.isEmpty { return stamped }
    guard let git = gitDirectory(root), let head = read(git + "/HEAD") else { return "unknown" }
    let hash = head.hasPrefix("ref: ") ? resolve(String(head.dropFirst(5)), in: git) : head
    guard let hash, hash.count >= 12, hash.allSatisfy(\.isHexDigit) else { return "unknown" }
    return String(hash.prefix(12))
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: bearerd-commit-stamp PACKAGE_DIR OUTPUT\n".utf8))
    exit(2)
}
let value = commit(arguments[1]).filter { $0.isLetter || $0.isNumber || $0 == "-" }
let source = """
    // Written by bearerd-commit-stamp (Plugins/CommitStamp) at build time.
    extension BearerdVersion {
        /// The commit this binary was built from (`git rev-parse --short=12 HEAD`; with `-dirty`
        /// in a package built from a tree with changes), or "unknown" outside a git checkout.
        package static let commit = "\(value)"
    }

    """
if read(arguments[2]).map({ $0 + "\n" }) != source.trimmingCharacters(in: .whitespacesAndNewlines) + "\n" {
    try source.write(toFile: arguments[2], atomically: true, encoding: .utf8)
}
