local counter = 0
local tid = math.random(1, 1e9)
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")
local src = os.getenv("SRC")
local mode = os.getenv("MODE") or "new"
request = function()
  local calls = {}
  for i = 1, 20 do
    counter = counter + 1
    local uid
    if mode == "new" then uid = "nu-" .. tid .. "-" .. counter else uid = "u-" .. (counter % 1000) end
    calls[i] = '{"type":"track","event":"Batch Event","messageId":"m-' .. tid .. '-' .. counter .. '","identifiers":{"userId":"' .. uid .. '"},"properties":{"plan":"pro","n":' .. counter .. '}}'
  end
  return wrk.format(nil, "/v1/batch", nil, '{"data":{"sourceId":"' .. src .. '","calls":[' .. table.concat(calls, ",") .. ']}}')
end
