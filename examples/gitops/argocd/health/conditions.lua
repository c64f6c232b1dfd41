-- Shared by the health checks in this directory: hack/argocdhealth puts
-- this file in front of each of them in the argocd-cm keys it writes.
-- Argo CD runs a health check with Lua's base, table and package libraries
-- and a few os functions only: no string library, so messages are built by
-- concatenation.

-- condition returns the condition of type ctype in conds, or nil.
local function condition(conds, ctype)
  if conds == nil then
    return nil
  end
  for _, c in ipairs(conds) do
    if c.type == ctype then
      return c
    end
  end
  return nil
end

-- explain returns what a condition says: its message, or its reason when
-- it has none.
local function explain(c)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return c.type .. " is " .. tostring(c.status)
end

-- assess applies the rule all these health checks share to conds:
-- Suspended when Synced is False because reconciliation is paused (the
-- crossplane.io/paused annotation, as the runbook's rollback sets it on a
-- floating IP binding), Degraded with Synced's message when Synced is
-- False otherwise, Healthy when Synced and Ready are both True, nil
-- otherwise (the resource is progressing and the caller says on what).
local function assess(conds)
  local synced = condition(conds, "Synced")
  if synced ~= nil and synced.status == "False" then
    if synced.reason == "ReconcilePaused" then
      return {status = "Suspended", message = explain(synced)}
    end
    return {status = "Degraded", message = explain(synced)}
  end
  local ready = condition(conds, "Ready")
  if synced ~= nil and synced.status == "True" and ready ~= nil and ready.status == "True" then
    return {status = "Healthy", message = ""}
  end
  return nil
end

-- Condition types of the steps a resource goes through before it is
-- Ready, in their order: a Gateway's.
local steps = {"ConfigRendered", "DeploymentReady"}

-- waiting returns the condition in conds that holds the resource up:
-- Synced when False (but not paused: a paused resource holds nothing up by
-- itself), else the first step that is not True, else Ready when not True;
-- nil when none does.
local function waiting(conds)
  local synced = condition(conds, "Synced")
  if synced ~= nil and synced.status == "False" and synced.reason ~= "ReconcilePaused" then
    return synced
  end
  for _, t in ipairs(steps) do
    local c = condition(conds, t)
    if c ~= nil and c.status ~= "True" then
      return c
    end
  end
  local ready = condition(conds, "Ready")
  if ready ~= nil and ready.status ~= "True" then
    return ready
  end
  return nil
end
