import Foundation

/// The interpreter of the AWS test environment (`.build-aws`, made by `make aws-venv`: moto in
/// server mode, boto3 and the AWS CLI), or `$AWS_PYTHON`.
public enum AWSPython {
    /// The interpreter to run moto and the AWS clients with.
    public static var path: String { VirtualEnvPython.path(folder: ".build-aws", variable: "AWS_PYTHON") }
    /// The AWS CLI of that environment (`aws`, a script run by its interpreter).
    public static var cli: [String] {
        let python = path
        return python == "python3" ? ["aws"] : [python, (python as NSString).deletingLastPathComponent + "/aws"]
    }
}
