"""The Chakra execution-trace messages (MLCommons Chakra ``schema/protobuf/et_def.proto``,
package ``ChakraProtoMsg``), built at run time with the ``protobuf`` package.

Only the messages and fields an ASTRA-sim workload needs are declared, with upstream's
names, numbers and types, so a file written with them decodes with the full upstream
schema (protobuf readers skip nothing they know and ignore nothing they need): no
generated ``_pb2`` module and no ``protoc`` at build time.  ``AttributeProto`` keeps
upstream's ``value`` oneof with the members used here.

An ET file is a sequence of length-delimited messages (`write_delimited`: a varint
byte length, then the message), ``GlobalMetadata`` first, then one ``Node`` per task;
`read_delimited` reads them back.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "COLLECTIVE_TYPES",
    "NODE_TYPES",
    "SCHEMA_VERSION",
    "AttributeProto",
    "GlobalMetadata",
    "Node",
    "read_delimited",
    "write_delimited",
]

#: GlobalMetadata.version of the schema mirrored here.
SCHEMA_VERSION = "0.0.4"

NODE_TYPES = {
    "INVALID_NODE": 0,
    "METADATA_NODE": 1,
    "MEM_LOAD_NODE": 2,
    "MEM_STORE_NODE": 3,
    "COMP_NODE": 4,
    "COMM_SEND_NODE": 5,
    "COMM_RECV_NODE": 6,
    "COMM_COLL_NODE": 7,
}
COLLECTIVE_TYPES = {
    "ALL_REDUCE": 0,
    "REDUCE": 1,
    "ALL_GATHER": 2,
    "GATHER": 3,
    "SCATTER": 4,
    "BROADCAST": 5,
    "ALL_TO_ALL": 6,
    "REDUCE_SCATTER": 7,
    "REDUCE_SCATTER_BLOCK": 8,
    "BARRIER": 9,
}

_F = descriptor_pb2.FieldDescriptorProto
# (message, [(name, number, type, label, type_name, oneof_index)])
_MESSAGES = {
    "AttributeProto": [
        ("name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("doc_string", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("double_val", 3, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, None, 0),
        ("int32_val", 7, _F.TYPE_INT32, _F.LABEL_OPTIONAL, None, 0),
        ("int64_val", 9, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, 0),
        ("uint64_val", 13, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, 0),
        ("bool_val", 27, _F.TYPE_BOOL, _F.LABEL_OPTIONAL, None, 0),
        ("string_val", 29, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, 0),
    ],
    "GlobalMetadata": [
        ("version", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("attr", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".ChakraProtoMsg.AttributeProto", None),
    ],
    "IOInfo": [
        ("values", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("shapes", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("types", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
    ],
    "Node": [
        ("id", 1, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("type", 3, _F.TYPE_ENUM, _F.LABEL_OPTIONAL, ".ChakraProtoMsg.NodeType", None),
        ("ctrl_deps", 4, _F.TYPE_UINT64, _F.LABEL_REPEATED, None, None),
        ("data_deps", 5, _F.TYPE_UINT64, _F.LABEL_REPEATED, None, None),
        ("start_time_micros", 6, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, None),
        ("duration_micros", 7, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, None),
        ("inputs", 8, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, ".ChakraProtoMsg.IOInfo", None),
        ("outputs", 9, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, ".ChakraProtoMsg.IOInfo", None),
        ("attr", 10, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".ChakraProtoMsg.AttributeProto", None),
    ],
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="fabric_designer/chakra_et_def.proto", package="ChakraProtoMsg", syntax="proto3"
    )
    for enum_name, values in (("NodeType", NODE_TYPES), ("CollectiveCommType", COLLECTIVE_TYPES)):
        enum = fdp.enum_type.add(name=enum_name)
        for key, number in values.items():
            enum.value.add(name=key, number=number)
    for msg_name, fields in _MESSAGES.items():
        msg = fdp.message_type.add(name=msg_name)
        if any(f[5] is not None for f in fields):
            msg.oneof_decl.add(name="value")
        for name, number, typ, label, type_name, oneof in fields:
            field = msg.field.add(name=name, number=number, type=typ, label=label)
            if type_name:
                field.type_name = type_name
            if oneof is not None:
                field.oneof_index = oneof
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
_CLASSES = message_factory.GetMessages([_file()], pool=_POOL)
AttributeProto = _CLASSES["ChakraProtoMsg.AttributeProto"]
GlobalMetadata = _CLASSES["ChakraProtoMsg.GlobalMetadata"]
Node = _CLASSES["ChakraProtoMsg.Node"]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def write_delimited(messages) -> bytes:
    """``messages`` serialised, each behind its varint byte length."""
    parts = []
    for m in messages:
        data = m.SerializeToString(deterministic=True)
        parts += [_varint(len(data)), data]
    return b"".join(parts)


def read_delimited(data: bytes) -> Iterator[bytes]:
    """The raw messages of a length-delimited stream (`write_delimited`'s inverse)."""
    at = 0
    while at < len(data):
        size = shift = 0
        while True:
            if at >= len(data):
                raise ValueError("truncated length prefix")
            byte = data[at]
            at += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if at + size > len(data):
            raise ValueError("truncated message")
        yield data[at : at + size]
        at += size
