-- Wireshark dissector for Flare, the in-network allreduce protocol
-- (docs/PROTOCOL.md). Every packet type, registered on UDP 7470 and as a
-- heuristic on any UDP port. Fields are under flare.*:
--   tshark -X lua_script:contrib/wireshark/flare.lua -r capture.pcap \
--          -T fields -e flare.type -e flare.job -e flare.block
-- Install: copy to ~/.local/lib/wireshark/plugins/ (or the global plugins
-- directory) and restart Wireshark. A switch on another port than 7470 is
-- found by the heuristic, which Wireshark asks after the dissectors
-- registered on a packet's ports: add -o udp.try_heuristic_first:TRUE
-- where a port of the run is another protocol's (44818, 47808, ...).

local flare = Proto("flare", "Flare in-network allreduce")

local types = { [1] = "join", [2] = "join-ack", [3] = "error", [4] = "data",
                [5] = "result", [6] = "sparse", [7] = "spill", [8] = "leave", [9] = "abort" }
local codes = { [1] = "refused-memory", [2] = "bad-request", [3] = "job-mismatch", [4] = "job-full",
                [5] = "too-many-jobs", [6] = "timeout", [7] = "unknown-job", [8] = "internal",
                [9] = "waiting", [10] = "aborted" }
local dtypes = { [1] = "int8", [2] = "int16", [3] = "int32", [4] = "int64",
                 [5] = "float32", [6] = "float64", [7] = "bfloat16", [8] = "float16" }
local dsizes = { [1] = 1, [2] = 2, [3] = 4, [4] = 8, [5] = 4, [6] = 8, [7] = 2, [8] = 2 }
local ops = { [1] = "sum", [2] = "min", [3] = "max", [4] = "prod", [5] = "and", [6] = "or", [7] = "xor" }
local algos = { [0] = "auto", [1] = "single", [2] = "multi", [3] = "tree" }
local storages = { [0] = "dense", [1] = "hash", [2] = "array" }

local f = flare.fields
f.version    = ProtoField.uint8("flare.version", "Version")
f.type       = ProtoField.uint8("flare.type", "Type", base.DEC, types)
f.flags      = ProtoField.uint16("flare.flags", "Flags", base.HEX)
f.flag_last  = ProtoField.bool("flare.flags.last", "Last", 16, nil, 0x0001)
f.flag_retx  = ProtoField.bool("flare.flags.retransmit", "Retransmit", 16, nil, 0x0002)
f.flag_part  = ProtoField.bool("flare.flags.partial", "Partial", 16, nil, 0x0004)
f.flag_sw    = ProtoField.bool("flare.flags.from_switch", "From switch", 16, nil, 0x0008)
f.flag_group = ProtoField.bool("flare.flags.group", "Group (join ack names a multicast group)", 16, nil, 0x0010)
f.job        = ProtoField.uint32("flare.job", "Job")
f.token      = ProtoField.uint64("flare.token", "Token", base.HEX)
f.generation = ProtoField.uint32("flare.generation", "Generation")
f.block      = ProtoField.uint32("flare.block", "Block")
f.child      = ProtoField.uint16("flare.child", "Child")
f.dtype      = ProtoField.uint8("flare.dtype", "DType", base.DEC, dtypes)
f.op         = ProtoField.uint8("flare.op", "Op", base.DEC, ops)
f.count      = ProtoField.uint32("flare.count", "Count")
f.payload    = ProtoField.bytes("flare.payload", "Payload")
f.index      = ProtoField.uint32("flare.pair.index", "Index")
f.value      = ProtoField.bytes("flare.pair.value", "Value")
-- Join
f.world      = ProtoField.uint16("flare.join.world", "World")
f.algo       = ProtoField.uint8("flare.join.algo", "Algo", base.DEC, algos)
f.buffers    = ProtoField.uint8("flare.join.buffers", "Buffers")
f.options    = ProtoField.uint8("flare.join.options", "Options", base.HEX)
f.storage    = ProtoField.uint8("flare.join.storage", "Storage", base.DEC, storages)
f.deadline   = ProtoField.uint16("flare.join.deadline_ms", "Block deadline (ms)")
f.elements   = ProtoField.uint64("flare.join.elements", "Elements")
f.pelems     = ProtoField.uint32("flare.join.packet_elems", "Packet elements")
f.timeout    = ProtoField.uint32("flare.join.timeout_ms", "Timeout (ms)")
f.belems     = ProtoField.uint32("flare.join.block_elems", "Block elements (sparse)")
f.session    = ProtoField.uint32("flare.join.session", "Session (the header's block)", base.HEX)
f.stream     = ProtoField.uint32("flare.join.stream_packets", "Stream packets (child switch, sparse)")
-- JoinAck
f.window     = ProtoField.uint32("flare.ack.window", "Window")
f.ack_algo   = ProtoField.uint8("flare.ack.algo", "Algo", base.DEC, algos)
f.ack_bufs   = ProtoField.uint8("flare.ack.buffers", "Buffers")
f.ack_pelems = ProtoField.uint32("flare.ack.packet_elems", "Packet elements")
f.blocks     = ProtoField.uint32("flare.ack.blocks", "Blocks")
f.quota      = ProtoField.uint32("flare.ack.quota_buffers", "Quota buffers")
f.group      = ProtoField.ipv4("flare.ack.group", "Multicast group")
f.group_port = ProtoField.uint16("flare.ack.group_port", "Multicast group port")
-- Error and Abort
f.err_code   = ProtoField.uint16("flare.error.code", "Code", base.DEC, codes)
f.err_text   = ProtoField.string("flare.error.text", "Text")

local HEADER_LEN = 32
-- Protocol version 2 (wire.Version); version 1 differs only in its
-- 24-byte join body, decoded too so that an old host's join shows.
local VERSION = 2

local function looks_like_flare(tvb)
  if tvb:len() < HEADER_LEN then return false end
  local v, t = tvb(0, 1):uint(), tvb(1, 1):uint()
  return (v == VERSION or v == 1) and t >= 1 and t <= 9
end

function flare.dissector(tvb, pinfo, tree)
  if not looks_like_flare(tvb) then return 0 end
  pinfo.cols.protocol = "Flare"
  local t = tvb(1, 1):uint()
  local dt = tvb(26, 1):uint()
  local root = tree:add(flare, tvb(), "Flare")
  local h = root:add(flare, tvb(0, HEADER_LEN), "Header")
  h:add(f.version, tvb(0, 1))
  h:add(f.type, tvb(1, 1))
  local fl = h:add(f.flags, tvb(2, 2))
  fl:add(f.flag_last, tvb(2, 2))
  fl:add(f.flag_retx, tvb(2, 2))
  fl:add(f.flag_part, tvb(2, 2))
  fl:add(f.flag_sw, tvb(2, 2))
  fl:add(f.flag_group, tvb(2, 2))
  h:add(f.job, tvb(4, 4))
  h:add(f.token, tvb(8, 8))
  h:add(f.generation, tvb(16, 4))
  h:add(f.block, tvb(20, 4))
  h:add(f.child, tvb(24, 2))
  h:add(f.dtype, tvb(26, 1))
  h:add(f.op, tvb(27, 1))
  h:add(f.count, tvb(28, 4))
  pinfo.cols.info = string.format("%s job=%d gen=%d block=%d child=%d count=%d",
    types[t] or "?", tvb(4, 4):uint(), tvb(16, 4):uint(), tvb(20, 4):uint(), tvb(24, 2):uint(), tvb(28, 4):uint())

  local rest = tvb:len() - HEADER_LEN
  if rest <= 0 then return tvb:len() end
  local p = tvb(HEADER_LEN, rest)
  local v = tvb(0, 1):uint()
  if t == 1 and rest >= 24 then
    local b = root:add(flare, p, v == 1 and "Join (version 1: refused by a version-2 switch)" or "Join")
    b:add(f.session, tvb(20, 4))
    b:add(f.world, p(0, 2)); b:add(f.algo, p(2, 1)); b:add(f.buffers, p(3, 1))
    b:add(f.options, p(4, 1)); b:add(f.storage, p(5, 1)); b:add(f.deadline, p(6, 2)); b:add(f.elements, p(8, 8))
    b:add(f.pelems, p(16, 4)); b:add(f.timeout, p(20, 4))
    if v == VERSION and rest >= 32 then
      b:add(f.belems, p(24, 4)); b:add(f.stream, p(28, 4))
    end
  elseif t == 2 and rest >= 20 then
    local b = root:add(flare, p, "Join ack")
    b:add(f.window, p(0, 4)); b:add(f.ack_algo, p(4, 1)); b:add(f.ack_bufs, p(5, 1))
    b:add(f.ack_pelems, p(8, 4)); b:add(f.blocks, p(12, 4)); b:add(f.quota, p(16, 4))
    if rest >= 28 then
      b:add(f.group, p(20, 4)); b:add(f.group_port, p(24, 2))
    end
  elseif (t == 3 or t == 9) and rest >= 4 then
    local b = root:add(flare, p, t == 3 and "Error" or "Abort")
    b:add(f.err_code, p(0, 2))
    local n = math.min(p(2, 2):uint(), rest - 4)
    if n > 0 then b:add(f.err_text, p(4, n)) end
  elseif (t == 6 or t == 7) and dsizes[dt] then
    local size = 4 + dsizes[dt]
    local b = root:add(flare, p, string.format("Pairs (%d)", math.floor(rest / size)))
    for off = 0, rest - size, size do
      local pair = b:add(flare, p(off, size), "Pair")
      pair:add_le(f.index, p(off, 4))
      pair:add(f.value, p(off + 4, dsizes[dt]))
    end
  else
    root:add(f.payload, p)
  end
  return tvb:len()
end

DissectorTable.get("udp.port"):add(7470, flare)

local function heuristic(tvb, pinfo, tree)
  if not looks_like_flare(tvb) then return false end
  flare.dissector(tvb, pinfo, tree)
  return true
end
flare:register_heuristic("udp", heuristic)
