#pragma once
// torch.export's enums (torch/_export/serde/schema.py: ScalarType,
// MemoryFormat) and c10's, one table each, read by fx::load_exported and
// written by fx::save_exported.

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

namespace fx::detail {

// c10's dtype for schema.py's number, or nullopt for a number that names none.
std::optional<c10::ScalarType> scalar_type_from_schema(int64_t number);
// schema.py's number for a dtype, or nullopt for one torch.export cannot write.
std::optional<int64_t> schema_scalar_type(c10::ScalarType t);

std::optional<c10::MemoryFormat> memory_format_from_schema(int64_t number);
std::optional<int64_t> schema_memory_format(c10::MemoryFormat f);

}  // namespace fx::detail
