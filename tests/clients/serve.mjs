// Starts `triattn serve` on a free port for a client test and resolves with its base URL
// once it listens (the port is read from its stderr). TRIATTN_BINARY and TRIATTN_SHARED_DIR
// come from CTest; a missing one fails the test loudly.
import { spawn } from "node:child_process";

export const binary = process.env.TRIATTN_BINARY;
export const shared = process.env.TRIATTN_SHARED_DIR;
if (!binary || !shared) throw new Error("TRIATTN_BINARY and TRIATTN_SHARED_DIR must be set (CTest sets them)");

export async function startServer(args) {
  const server = spawn(binary, ["serve", "--port", "0", "-t", "2", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error("server did not start: " + err)), 30000);
    server.stderr.on("data", (d) => {
      err += d;
      // The whole line: a chunk may end inside the address (then "\S+" would match half a port).
      const m = err.match(/listening on (http:\/\/\S+) \(/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
  return { server, url };
}
