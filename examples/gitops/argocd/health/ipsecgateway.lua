-- Health of an IPsecGateway claim: Healthy when the claim is Synced and
-- Ready; Suspended while the claim is paused; Degraded with Synced's
-- message when the claim is not Synced otherwise; Progressing otherwise,
-- naming the first step of the runbook that waits (from the composed
-- resources' conditions the claim's status carries) or, when none does,
-- what the claim's Ready condition says. A pinned floating IP still held
-- by another port is such a step: the claim is pre-staged.
local st = obj.status
if st == nil then
  st = {}
end

-- tunnels summarises the gateway's tunnels: how many are up, and each one
-- that is not with charon's last error.
local function tunnels()
  if st.gateway == nil or st.gateway.tunnelsUp == nil then
    return ""
  end
  local s = "tunnels " .. st.gateway.tunnelsUp .. " up"
  for _, t in ipairs(st.tunnels or {}) do
    if t.ikeState ~= "ESTABLISHED" then
      s = s .. ", " .. t.name .. " " .. (t.ikeState or "DOWN")
      if t.lastError ~= nil and t.lastError ~= "" then
        s = s .. " (" .. t.lastError .. ")"
      end
    end
  end
  return s
end

local hs = assess(st.conditions)
if hs ~= nil then
  if hs.status == "Healthy" then
    local parts = {}
    if st.floatingIP ~= nil and st.floatingIP.address ~= nil then
      table.insert(parts, "floating IP " .. st.floatingIP.address .. " attached")
    end
    if tunnels() ~= "" then
      table.insert(parts, tunnels())
    end
    hs.message = table.concat(parts, ", ")
  end
  return hs
end

local order = {
  {field = "securityGroup", name = "security group"},
  {field = "port", name = "port"},
  {field = "floatingIP", name = "floating IP"},
  {field = "routing", name = "routes"},
  {field = "nodePorts", name = "node ports"},
  {field = "gateway", name = "gateway"},
}
for _, step in ipairs(order) do
  local s = st[step.field]
  if s ~= nil then
    local c = waiting(s.conditions)
    if step.field == "floatingIP" and s.attached ~= true then
      local msg = "floating IP is not attached yet"
      if s.address ~= nil then
        msg = "floating IP " .. s.address .. " is not attached yet"
      end
      if c ~= nil then
        msg = msg .. ": " .. explain(c)
      end
      return {status = "Progressing", message = msg}
    end
    if c ~= nil then
      local msg = step.name .. ": " .. explain(c)
      if step.field == "gateway" and tunnels() ~= "" then
        msg = msg .. "; " .. tunnels()
      end
      return {status = "Progressing", message = msg}
    end
  end
end
local ready = condition(st.conditions, "Ready")
if ready ~= nil then
  return {status = "Progressing", message = explain(ready)}
end
return {status = "Progressing", message = "waiting for Crossplane to reconcile the claim"}
