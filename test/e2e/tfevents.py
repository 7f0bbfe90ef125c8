"""A small reader of TensorBoard event files, independent of the writer under test and of
TensorFlow/TensorBoard: TFRecord framing with both masked CRC-32C checks, and the protobuf
wire format of the Event fields snn-run writes (docs/observability.md):
  Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5 }
  Summary { repeated Value value = 1 }   Value { string tag = 1; float simple_value = 2 }
"""
import struct


def _crc_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class BadRecord(Exception):
    pass


def read_records(path, allow_truncated_tail=False):
    """The payloads of every record, each CRC-checked. A file that ends inside a record (a
    writer killed mid-write) raises BadRecord unless `allow_truncated_tail`: then that last
    piece is left out, as TensorBoard's reader does."""
    with open(path, "rb") as f:
        data = f.read()
    records, at = [], 0
    while at < len(data):
        if at + 12 > len(data):
            if allow_truncated_tail:
                break
            raise BadRecord(f"{path}: {len(data) - at} bytes at {at}: a cut record header")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if header_crc != masked_crc32c(header):
            raise BadRecord(f"{path}: record at byte {at}: length CRC mismatch")
        end = at + 12 + length + 4
        if end > len(data):
            if allow_truncated_tail:
                break
            raise BadRecord(f"{path}: record at byte {at} of {length} bytes is cut")
        payload = data[at + 12:at + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[end - 4:end])
        if payload_crc != masked_crc32c(payload):
            raise BadRecord(f"{path}: record at byte {at}: payload CRC mismatch")
        records.append(payload)
        at = end
    return records


def _varint(data, at):
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def fields(data):
    """(field number, wire type, value) of a message: varints as ints, fixed64 / fixed32 as
    their 8 / 4 bytes, length-delimited as bytes."""
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at:at + length], at + length
        else:
            raise BadRecord(f"wire type {wire} of field {number}")
        out.append((number, wire, value))
    return out


def decode_event(payload):
    """{"wall_time", "step", "file_version" (or None), "scalars": [(tag, float32 value)]}."""
    event = {"wall_time": None, "step": 0, "file_version": None, "scalars": []}
    for number, wire, value in fields(payload):
        if number == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            event["step"] = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 3 and wire == 2:
            event["file_version"] = value.decode()
        elif number == 5 and wire == 2:
            event["scalars"] += _summary_values(value)
    return event


def _summary_values(summary):
    values = []
    for number, wire, value in fields(summary):
        if number != 1 or wire != 2:
            continue
        tag, simple = None, None
        for n, w, v in fields(value):
            if n == 1 and w == 2:
                tag = v.decode()
            elif n == 2 and w == 5:
                simple = struct.unpack("<f", v)[0]
        values.append((tag, simple))
    return values


def read_events(path, allow_truncated_tail=False):
    return [decode_event(r) for r in read_records(path, allow_truncated_tail)]
