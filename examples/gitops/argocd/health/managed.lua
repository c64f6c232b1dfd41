-- Health of a managed resource of provider-ipsec (every kind of
-- networking.ipsecgw.io and gateway.ipsecgw.io): Healthy when Synced and
-- Ready are True; Suspended while paused; Degraded with Synced's message
-- when Synced is False otherwise; Progressing otherwise, naming the
-- condition that waits.
local conds = nil
if obj.status ~= nil then
  conds = obj.status.conditions
end
local hs = assess(conds)
if hs ~= nil then
  return hs
end
local c = waiting(conds)
if c ~= nil then
  return {status = "Progressing", message = c.type .. ": " .. explain(c)}
end
if condition(conds, "Synced") == nil then
  return {status = "Progressing", message = "waiting for the provider to reconcile it"}
end
return {status = "Progressing", message = "waiting for the provider to report Ready"}
