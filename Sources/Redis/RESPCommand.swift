/// Encodes a command as a RESP2 array of bulk strings (binary-safe arguments).
public enum RESPCommand {
    /// `*n\r\n$len\r\narg\r\n…` for `arguments` (the command name first).
    public static func encode(_ arguments: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.count + 16 })
        out += Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            out += Array("$\(argument.count)\r\n".utf8)
            out += argument
            out += [13, 10]
        }
        return out
    }

    /// ``encode(_:)`` for text arguments.
    public static func encode(_ arguments: String...) -> [UInt8] {
        encode(arguments.map { Array($0.utf8) })
    }
}
