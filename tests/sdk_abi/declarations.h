/* declarations.h: every function of the UPMEM SDK 2025.1 host API (dpu.h and the headers
 * it brings in, and the low-level headers dpu_management.h, dpu_memory.h, dpu_runner.h,
 * dpu_program.h, dpu_log.h, dpu_description.h, dpu_elf.h), declared as the SDK declares it.
 * check_abi.c redeclares them after including pimrl's headers: any difference in a return
 * or parameter type is a compile error; test_sdk_abi.py also links every one of them. */
/* dpu.h */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set);
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);
struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *iterator);
dpu_error_t dpu_load_from_memory(struct dpu_set_t dpu_set, uint8_t *buffer, size_t buffer_size, struct dpu_program_t **program);
dpu_error_t dpu_load_from_incbin(struct dpu_set_t dpu_set, struct dpu_incbin_t *incbin, struct dpu_program_t **program);
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program);
dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name, struct dpu_symbol_t *symbol);
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault);
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src, size_t length);
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst, size_t length);
dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset, const void *src, size_t length);
dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset, void *dst, size_t length);
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);
dpu_error_t dpu_push_sg_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset, size_t length, get_block_t *get_block_info, dpu_sg_xfer_flags_t flags);
dpu_error_t dpu_push_sg_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol, uint32_t symbol_offset, size_t length, get_block_t *get_block_info, dpu_sg_xfer_flags_t flags);
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol, uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset, const void *src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_fifo_prepare_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, void *buffer);
dpu_error_t dpu_fifo_push_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, dpu_xfer_flags_t flags);
dpu_error_t dpu_callback(struct dpu_set_t dpu_set, dpu_error_t (*callback)(struct dpu_set_t, uint32_t, void *), void *args, dpu_callback_flags_t flags);
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

/* dpu_error.h */
char * dpu_error_to_string(dpu_error_t status);

/* dpu_checkpoint.h */
dpu_error_t dpu_checkpoint_save(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_restore(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
uint32_t dpu_checkpoint_get_serialized_context_size(struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_serialize(struct dpu_context_t *context, uint8_t **serialized_context, uint32_t *serialized_context_size);
dpu_error_t dpu_checkpoint_deserialize(const uint8_t *serialized_context, uint32_t serialized_context_size, struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_free(struct dpu_context_t *context);

/* dpu_fifo.h */
dpu_error_t dpu_link_input_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name);
dpu_error_t dpu_link_output_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name);
dpu_error_t dpu_fifo_link_free(struct dpu_fifo_link_t *fifo_link);
uint16_t get_fifo_size(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu);
uint8_t get_fifo_elem_index(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu, uint8_t i);
uint8_t * get_fifo_elem(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu, uint8_t *fifo_data, uint8_t i);
uint16_t get_fifo_max_size(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo);
struct dpu_fifo_rank_t * get_rank_fifo(struct dpu_fifo_link_t *fifo_link, struct dpu_rank_t *rank);
void dpu_fifo_set_push_max_retries(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu_set, uint32_t max_retries);
void dpu_fifo_set_time_for_push_retries(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu_set, uint32_t time_us);
uint8_t get_fifo_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint8_t get_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint64_t get_fifo_abs_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint64_t get_fifo_abs_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
void set_fifo_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu, uint8_t val);
void set_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu, uint8_t val);
void swap_fifo_rd_wr_ptr(struct dpu_fifo_rank_t *fifo);
void incr_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo);
bool is_fifo_full(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
bool is_fifo_empty(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);

/* dpu_bank_interface_pmc.h */
dpu_error_t dpu_bank_interface_pmc_enable(struct dpu_set_t set, bank_interface_pmc_config_t configuration);
dpu_error_t dpu_bank_interface_pmc_disable(struct dpu_set_t set);
dpu_error_t dpu_bank_interface_pmc_stop_counters(struct dpu_set_t set);
dpu_error_t dpu_bank_interface_pmc_read_counters(struct dpu_set_t set, bank_interface_pmc_result_t *result);

/* dpu_transfer_matrix.h */
void dpu_transfer_matrix_add_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix, void *buffer);
dpu_error_t dpu_transfer_matrix_add_dpu_block(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix, void *buffer, uint32_t length);
void dpu_transfer_matrix_set_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix, void *buffer);
void dpu_transfer_matrix_clear_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix);
void dpu_transfer_matrix_clear_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
void dpu_transfer_matrix_copy(struct dpu_transfer_matrix *dst, struct dpu_transfer_matrix *src);
void * dpu_transfer_matrix_get_ptr(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix);

/* dpu_management.h */
dpu_error_t dpu_get_profile_description(const char *profile, dpu_description_t *description);
dpu_error_t dpu_get_rank_of_type(const char *profile, struct dpu_rank_t **rank);
dpu_error_t dpu_free_rank(struct dpu_rank_t *rank);
void dpu_lock_rank(struct dpu_rank_t *rank);
int dpu_trylock_rank(struct dpu_rank_t *rank);
void dpu_unlock_rank(struct dpu_rank_t *rank);
struct dpu_t * dpu_get(struct dpu_rank_t *rank, dpu_slice_id_t slice_id, dpu_member_id_t dpu_id);
dpu_id_t dpu_get_id(struct dpu_t *dpu);
dpu_id_t dpu_get_rank_id(struct dpu_rank_t *rank);
int dpu_get_rank_numa_node(struct dpu_rank_t *rank);
struct dpu_rank_t * dpu_get_rank(struct dpu_t *dpu);
dpu_slice_id_t dpu_get_slice_id(struct dpu_t *dpu);
dpu_member_id_t dpu_get_member_id(struct dpu_t *dpu);
bool dpu_is_enabled(struct dpu_t *dpu);
dpu_description_t dpu_get_description(struct dpu_rank_t *rank);
struct dpu_set_t dpu_set_from_rank(struct dpu_rank_t **rank);
struct dpu_set_t dpu_set_from_dpu(struct dpu_t *dpu);
struct dpu_rank_t * dpu_rank_from_set(struct dpu_set_t set);
struct dpu_t * dpu_from_set(struct dpu_set_t set);
struct dpu_iterator_t dpu_iterator_from(struct dpu_rank_t *rank);
void dpu_iterator_next(struct dpu_iterator_t *iterator);

/* dpu_memory.h */
dpu_error_t dpu_copy_to_iram_for_rank(struct dpu_rank_t *rank, iram_addr_t iram_instruction_index, const dpuinstruction_t *source, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_to_iram_for_dpu(struct dpu_t *dpu, iram_addr_t iram_instruction_index, const dpuinstruction_t *source, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_from_iram_for_dpu(struct dpu_t *dpu, dpuinstruction_t *destination, iram_addr_t iram_instruction_index, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_to_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix);
dpu_error_t dpu_copy_from_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix);
dpu_error_t dpu_copy_to_wram_for_rank(struct dpu_rank_t *rank, wram_addr_t wram_word_offset, const dpuword_t *source, wram_size_t nb_of_words);
dpu_error_t dpu_copy_to_wram_for_dpu(struct dpu_t *dpu, wram_addr_t wram_word_offset, const dpuword_t *source, wram_size_t nb_of_words);
dpu_error_t dpu_copy_to_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_wram_for_dpu(struct dpu_t *dpu, dpuword_t *destination, wram_addr_t wram_word_offset, wram_size_t nb_of_words);
dpu_error_t dpu_copy_from_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_to_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_to_mram(struct dpu_t *dpu, mram_addr_t mram_byte_offset, const uint8_t *source, mram_size_t nb_of_bytes);
dpu_error_t dpu_copy_from_mram(struct dpu_t *dpu, uint8_t *destination, mram_addr_t mram_byte_offset, mram_size_t nb_of_bytes);
dpu_error_t dpu_copy_to_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);

/* dpu_runner.h */
dpu_error_t dpu_launch_thread_on_rank(struct dpu_rank_t *rank, dpu_thread_t thread, bool should_resume);
dpu_error_t dpu_launch_thread_on_dpu(struct dpu_t *dpu, dpu_thread_t thread, bool should_resume);
dpu_error_t dpu_poll_rank(struct dpu_rank_t *rank);
dpu_error_t dpu_poll_dpu(struct dpu_t *dpu, bool *dpu_is_running, bool *dpu_is_in_fault);
dpu_run_context_t dpu_get_run_context(struct dpu_rank_t *rank);
dpu_error_t dpu_boot_dpu(struct dpu_t *dpu);
dpu_error_t dpu_boot_rank(struct dpu_rank_t *rank);
dpu_error_t dpu_status_rank(struct dpu_rank_t *rank, bool *done, bool *fault);
dpu_error_t dpu_status_dpu(struct dpu_t *dpu, bool *done, bool *fault);

/* dpu_program.h */
void dpu_init_program_ref(struct dpu_program_t *program);
void dpu_take_program_ref(struct dpu_program_t *program);
void dpu_free_program(struct dpu_program_t *program);
struct dpu_program_t * dpu_get_program(struct dpu_t *dpu);
void dpu_set_program(struct dpu_t *dpu, struct dpu_program_t *program);
dpu_error_t dpu_load_elf_program_from_memory(dpu_elf_file_t *elf_info, const char *path, uint8_t *buffer_start, size_t buffer_size, struct dpu_program_t *program, mram_size_t mram_size_hint);
dpu_error_t dpu_load_elf_program(dpu_elf_file_t *elf_info, const char *path, struct dpu_program_t *program, mram_size_t mram_size_hint);
dpu_error_t dpu_get_common_program(struct dpu_set_t *dpu_set, struct dpu_program_t **program);

/* dpu_log.h */
dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *stream);

/* dpu_description.h */
void dpu_acquire_description(dpu_description_t description);
void dpu_free_description(dpu_description_t description);

/* dpu_elf.h */
dpu_error_t dpu_elf_open(const char *path, dpu_elf_file_t *file);
dpu_error_t dpu_elf_map(uint8_t *memory, unsigned int size, dpu_elf_file_t *file, const char *filename_or_null);
void dpu_elf_close(dpu_elf_file_t file);
dpu_error_t dpu_elf_load_section(dpu_elf_file_t file, const char *name, unsigned int *size, uint8_t **buffer);
dpu_error_t dpu_elf_load_symbols(dpu_elf_file_t file, const char *name, dpu_elf_symbols_t **symbols);
void dpu_elf_free_symbols(dpu_elf_symbols_t *symbols);
dpu_error_t dpu_elf_get_sections(dpu_elf_file_t file, unsigned int *nr_sections, char ***sections);
void dpu_elf_get_runtime_info(dpu_elf_file_t file, dpu_elf_runtime_info_t *runtime_info);
void free_runtime_info(dpu_elf_runtime_info_t *runtime_info);
dpu_error_t dpu_elf_create_core_dump(const char *exe_path, const char *core_file_path, uint8_t *wram, uint8_t *mram, uint8_t *iram, uint8_t *context, uint32_t wram_size, uint32_t mram_size, uint32_t iram_size, uint32_t context_size);
