-- submit.lua at a paced rate (benchmarks/calendar_bench.py, "gas per item at 1,000 submissions/s"): each
-- connection waits PACE_MS (the environment variable) before each request. wrk runs with its working
-- directory at the repository's root.
dofile("benchmarks/wrk/submit.lua")

local pace = tonumber(os.getenv("PACE_MS")) or 16

function delay()
  return pace
end
