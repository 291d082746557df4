extension CanonicalTarget {
    /// The request target sent upstream under `basePath`, the path of `upstream.url` without a
    /// trailing slash (`""` or e.g. `/v2`, as BearerdConfig's `UpstreamTarget` reads it): the
    /// base path, then the target, which starts with its one `/`. The data path writes the same
    /// two parts into the request line (`HeaderRewriter`, ``ForwardTarget/write(of:into:)``).
    package func joined(under basePath: String) -> String {
        basePath + self.target
    }
}
