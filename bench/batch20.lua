-- POST /v1/batch with 20 track calls (bench/scale-out.sh). MODE=new gives every call a new userId,
-- else userIds cycle through 1,000. Every wrk thread has an id of its own (setup), and RUN (set it
-- per wrk invocation) keeps a measured run from repeating its warm-up's messageIds: Lua's
-- math.random is not seeded, so an id drawn from it is the same in every thread and every run.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local counter = 0
local run = os.getenv("RUN") or tostring(os.time())
local src = os.getenv("SRC")
local mode = os.getenv("MODE") or "new"

function init(args)
  tid = tostring(tid or 1)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")
end

function request()
  local calls = {}
  for i = 1, 20 do
    counter = counter + 1
    local uid
    if mode == "new" then uid = "nu-" .. run .. "-" .. tid .. "-" .. counter else uid = "u-" .. (counter % 1000) end
    calls[i] = '{"type":"track","event":"Batch Event","messageId":"m-' .. run .. '-' .. tid .. '-' .. counter .. '","identifiers":{"userId":"' .. uid .. '"},"properties":{"plan":"pro","n":' .. counter .. '}}'
  end
  return wrk.format(nil, "/v1/batch", nil, '{"data":{"sourceId":"' .. src .. '","calls":[' .. table.concat(calls, ",") .. ']}}')
end
