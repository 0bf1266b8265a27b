-- wrk script: bench/app.sh's application workload, as flint bench's templated one does it.
-- Usage: wrk ... -s bench/app.lua URL -- USERS.CSV WANT
-- Each request: GET /item.html?id=<id>&r=<random 1..100000> with "X-User: <name>", from the next
-- row of the CSV (read once, in init; round and round, as flint's `pick = "cycle"`). Each
-- response: its status 200 and its body holding WANT, else counted as a failure; done() prints
-- "check failures: N" (wrk's own counters know nothing of it).
local rows, next_row, want = {}, 0, nil
failed = 0 -- a global: done() reads it from each thread with thread:get
local threads = {}

setup = function(thread)
   table.insert(threads, thread)
end

init = function(args)
   local f = assert(io.open(args[1], "r"))
   local first = true
   for line in f:lines() do
      if first then
         first = false -- the column names: id,name
      else
         local id, name = line:match("^([^,]*),([^,]*)$")
         if id then
            table.insert(rows, { id = id, name = name })
         end
      end
   end
   f:close()
   assert(#rows > 0, "no rows in " .. args[1])
   want = args[2]
   math.randomseed(os.time())
end

request = function()
   next_row = next_row % #rows + 1
   local row = rows[next_row]
   local path = "/item.html?id=" .. row.id .. "&r=" .. math.random(1, 100000)
   return wrk.format("GET", path, { ["X-User"] = row.name })
end

response = function(status, headers, body)
   if status ~= 200 or not body:find(want, 1, true) then
      failed = failed + 1
   end
end

done = function(summary, latency, requests)
   local n = 0
   for _, t in ipairs(threads) do
      n = n + (t:get("failed") or 0)
   end
   io.write(string.format("check failures: %d\n", n))
end
