import Foundation

/// A throwaway certificate authority and a server certificate it signed, valid for both
/// `localhost` and `127.0.0.1`, so TLS tests verify the chain for real (via the CA file)
/// instead of switching verification off.
public struct TLSMaterial: Sendable {
    public let caCertPath: String
    public let certPath: String
    public let keyPath: String

    public init(caCertPath: String, certPath: String, keyPath: String) {
        self.caCertPath = caCertPath
        self.certPath = certPath
        self.keyPath = keyPath
    }

    /// Generates EC P-256 keys, the CA and the server certificate into `dir` with the
    /// `openssl` command-line tool. The server certificate is for `names` (a subjectAltName value).
    public static func generate(in dir: String, names: String = "DNS:localhost, IP:127.0.0.1") throws -> TLSMaterial {
        guard let openssl = findExecutable("openssl") else {
            throw TestSupportError.missingExecutable(path: "openssl", hint: "install the openssl package")
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let caKey = dir + "/ca.key", caCert = dir + "/ca.pem"
        let key = dir + "/server.key", csr = dir + "/server.csr", cert = dir + "/server.pem"
        let ext = dir + "/server.ext"

        func openssl_(_ args: [String]) throws {
            let result = try runProcess(openssl, args, timeout: 60)
            guard result.status == 0 else {
                throw TestSupportError.processFailed(
                    command: "openssl " + args.joined(separator: " "),
                    status: result.status, stderr: result.stderr)
            }
        }
        let newKey = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"]
        try openssl_(newKey + [caKey])
        try openssl_([
            "req", "-x509", "-new", "-key", caKey, "-sha256", "-days", "3650",
            "-subj", "/CN=mprobe test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-out", caCert,
        ])
        try openssl_(newKey + [key])
        try openssl_(["req", "-new", "-key", key, "-subj", "/CN=localhost", "-out", csr])
        // Clients match the host against subjectAltName only (CN is ignored), so both the
        // name and the address the tests connect to must be listed here.
        try """
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = \(names)

        """.write(toFile: ext, atomically: true, encoding: .utf8)
        // A random serial (leading 01 keeps it positive) avoids the .srl file that
        // -CAcreateserial would leave behind, and repeated runs never reuse a serial.
        let serial =
            "0x01"
            + randomBytes(15, seed: UInt64.random(in: 1...UInt64.max))
            .map { String(format: "%02x", $0) }.joined()
        try openssl_([
            "x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey,
            "-set_serial", serial, "-days", "825", "-sha256",
            "-extfile", ext, "-out", cert,
        ])
        return TLSMaterial(caCertPath: caCert, certPath: cert, keyPath: key)
    }
}
