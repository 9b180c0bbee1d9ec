#!lua flags=no-writes
--- One id's runs of consecutive periods in an event's bitmaps: the longest, where it ends, the current one and how many periods have it
-- KEYS[1..] bitmaps string ro: the event's bitmaps of consecutive periods, oldest first (a missing period is an empty
--    bitmap); they share the event's hash tag
-- ARGV[1] id integer 0..4294967295: the id (bit offset) whose bits are read
-- RETURNS integers: {longest, ends, current, marked}: the longest run of consecutive periods with the bit set, the
--    index in KEYS of its last period (the earliest such run; 0 when there is none), the run that ends at the last
--    period (0 when its bit is not set), and how many of the periods have the bit set
-- READS GETBIT

local longest, ends, run, marked = 0, 0, 0, 0
for i = 1, #KEYS do
  if redis.call('GETBIT', KEYS[i], ARGV[1]) == 1 then
    run = run + 1
    marked = marked + 1
    if run > longest then
      longest, ends = run, i
    end
  else
    run = 0
  end
end
return { longest, ends, run, marked }
