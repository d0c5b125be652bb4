-- POST /v1/manifests with a new manifest identity each time (benchmarks/calendar_bench.py).
-- wrk runs one Lua state per thread: each gets its own number, so no two requests repeat an identity.
-- Arguments after `--`: the bearer token, a salt that keeps one run's identities from another's, and the
-- route (default /v1/manifests; the bare peer's is /v1/calendar-peer).
local made = 0
function setup(thread)
  made = made + 1
  thread:set("id", made)
end

function init(args)
  token = args[1]
  salt = tonumber(args[2]) or 0
  route = args[3] or "/v1/manifests"
  sent = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  sent = sent + 1
  local root = string.format("%08x%08x%016x", salt % 4294967296, id, sent) .. string.rep("0", 32)
  local body = '{"manifest":{"kind":"filetree","version":1,"files_root":"' .. root
    .. '","file_count":1,"total_size":' .. sent .. '}}'
  return wrk.format(nil, route, nil, body)
end

function response(status, headers, body)
  if status ~= 202 then
    refused = (refused or 0) + 1
  end
end
