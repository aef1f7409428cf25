#!/bin/sh
# test_http_curl.sh RCP -- the HTTP transport (§5.2) end to end with curl,
# the client most people will first point at it: the README's quick start
# and each status of the mapping, as a shell user would see them.
# make check runs it when curl is installed.
set -u
RCP=${1:-./rcp}
command -v curl >/dev/null 2>&1 || { echo "curl not installed: skipped"; exit 0; }
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
fails=0
check() {               # check NAME EXPECTED ACTUAL
    case $3 in
    *"$2"*) ;;
    *) echo "FAIL $1: wanted '$2' in:"; echo "$3" | sed 's/^/    /'
       fails=$((fails + 1)) ;;
    esac
}
n=0
start() {               # start ARGS...: the server, its URL in $url,
    n=$((n + 1))        # its stderr in $err
    err="$dir/err$n"
    : >"$err"
    "$RCP" serve --http 0 "$@" 2>"$err" &
    pid=$!
    i=0
    while ! grep -q '^rcp: listening on ' "$err" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 200 ] && { echo "FAIL: no listening line"; cat "$err"; exit 1; }
        sleep 0.05
    done
    url=$(sed -n 's/^rcp: listening on //p' "$err")
}
stop() {
    kill -TERM $pid; wait $pid; rc=$?
    check "exit 0 on SIGTERM" "0" "$rc"
}
J='Content-Type: application/json'

start --corpus tests/sample-corpus.jsonl --debug
out=$(curl -s -H "$J" -d '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"hi"}}' "$url/ping")
check "ping" '{"jsonrpc":"2.0","id":1,"result":{"nonce":"hi"}}' "$out"
out=$(curl -s -H "$J" -d '{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"blank lines","k":2}}' "$url/retrieve")
check "retrieve (stateless: no initialize)" '"id":2,"result":{"hits":[' "$out"
out=$(curl -s -w ' %{http_code}' -H "$J" -d '{"jsonrpc":"2.0","id":3,"method":"catalog/list","params":{}}' "$url/catalog/list")
check "JSON-RPC error is 200" '"code":-32003' "$out"
check "JSON-RPC error is 200 (status)" ' 200' "$out"
out=$(curl -s -w '%{http_code}' -H "$J" -d '{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":9}}' "$url/notifications/cancel")
check "notification: 202, no body" '202' "$out"
out=$(curl -s -w ' %{http_code}' -H "$J" -d '{"jsonrpc":"2.0","id":4,"method":"info"}' "$url/ping")
check "URL/body mismatch" '"code":-32600' "$out"
out=$(curl -s -w ' %{http_code}' -H "$J" -d '{"jsonrpc":' "$url/ping")
check "parse error: 400" '"code":-32700' "$out"
check "parse error: 400 (status)" ' 400' "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' "$url/ping")
check "GET: 405" '405' "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' -H "$J" -d '{}' "${url%/rcp}/elsewhere")
check "unknown path: 404" '404' "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' -d '{"jsonrpc":"2.0","id":5,"method":"ping"}' "$url/ping")
check "curl's default form Content-Type: 415" '415' "$out"
out=$(curl -s -H "$J" -d '[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"info"}]' "$url")
check "batch to the base" '[{"jsonrpc":"2.0","id":6,"result":{}}' "$out"
out=$(curl -s -N -H "$J" -H 'Accept: text/event-stream' -d '{"jsonrpc":"2.0","id":8,"method":"x-rcp/sleep","params":{"ms":150,"_meta":{"progressToken":"p"}}}' "$url/x-rcp/sleep")
check "SSE progress" 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p"' "$out"
check "SSE final frame" 'data: {"jsonrpc":"2.0","id":8,"result":{"slept":150}}' "$out"
out=$(curl -s -H "$J" -H 'Transfer-Encoding: chunked' -H 'Expect: 100-continue' --data-binary '{"jsonrpc":"2.0","id":9,"method":"ping"}' "$url/ping")
check "chunked body with Expect: 100-continue" '"id":9,"result":{}' "$out"
stop

printf 'secret-r read\nsecret-w write\n' > "$dir/tokens"
start --auth-token-file "$dir/tokens" --cors https://app.example --log-requests
out=$(curl -s -i -H "$J" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' "$url/initialize")
check "no token: 401" 'HTTP/1.1 401' "$out"
check "no token: WWW-Authenticate" 'WWW-Authenticate: Bearer' "$out"
check "no token: -32012" '"code":-32012' "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' -H "$J" -H 'Authorization: Bearer secret-r' -d '{"jsonrpc":"2.0","id":2,"method":"index/add","params":{"documents":[{"id":"a","text":"b"}]}}' "$url/index/add")
check "read token writing: 403" '403' "$out"
out=$(curl -s -H "$J" -H 'Authorization: Bearer secret-w' -d '{"jsonrpc":"2.0","id":3,"method":"index/add","params":{"documents":[{"id":"a","text":"b"}]}}' "$url/index/add")
check "write token writing" '"id":3,"result":' "$out"
out=$(curl -s -i -X OPTIONS -H 'Origin: https://app.example' -H 'Access-Control-Request-Method: POST' "$url/retrieve")
check "CORS preflight" 'Access-Control-Allow-Origin: https://app.example' "$out"
check "CORS preflight methods" 'Access-Control-Allow-Methods: POST' "$out"
stop
check "access log line" 'POST /rcp/index/add 403 ' "$(cat "$err")"
case $(cat "$err") in
*secret-w*|*'"documents"'*) echo "FAIL: the access log holds a token or a body"; fails=$((fails + 1)) ;;
esac

[ $fails -eq 0 ] && echo "curl end to end: all passed"
exit $fails
