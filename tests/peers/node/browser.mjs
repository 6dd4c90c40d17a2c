// The browser's part of an authorization, for authorization servers that
// approve at once (the conformance suite's, the release tests' own): GETs
// the URL to approve without following the redirect, then GETs the
// redirect's `Location`, the proxy's loopback callback. The proxy runs it
// as `BROWSER` with the URL as its last argument. Exit 0 when the callback
// answered.
const authorize = process.argv[process.argv.length - 1];
const answer = await fetch(authorize, { redirect: "manual" });
const location = answer.headers.get("location");
if (!location) {
  console.error(`browser: the authorization endpoint answered ${answer.status} without a redirect`);
  process.exit(1);
}
const back = await fetch(location);
await back.text();
process.exit(back.ok ? 0 : 1);
