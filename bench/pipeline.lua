-- wrk script: write DEPTH requests for the URL's path at once, as a pipelining client does.
-- Usage: wrk ... -s bench/pipeline.lua URL -- DEPTH
-- wrk counts each response; it writes the next batch when all of the batch's responses are in.
init = function(args)
   local depth = tonumber(args[1]) or 16
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format(nil)
   end
   req = table.concat(r)
end

request = function()
   return req
end
