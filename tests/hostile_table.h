/* The hostile-input table: every public function of include/rvis.h, each with
 * the case in tests/hostile/ that feeds it NaN, infinities, negative and zero sizes, huge
 * values, NULL and stale / foreign handles (named hostile_<function>).
 *
 * RVH_CASES(X) is the one list. test_hostile.c expands it into its case table, taking the
 * address of both the public function and its case, so a name that is not a declared
 * function or has no case does not compile; test_api_coverage.c expands it into the list
 * it checks the RV_API declarations of rvis.h against. Add a function here when its module
 * lands on main, with its case in tests/hostile/<module>.c. */
#ifndef RVH_TABLE_H
#define RVH_TABLE_H

#define RVH_CASES(X)                                                                       \
    /* core and world: tests/hostile/core.c */                                             \
    X(rv_result_string)                                                                    \
    X(rv_world_create)                                                                     \
    X(rv_world_destroy)                                                                    \
    X(rv_world_alloc_stats)                                                                \
    /* frustum: tests/hostile/frustum.c */                                                 \
    X(rv_frustum_from_view_projection)                                                     \
    X(rv_frustum_classify_sphere)                                                          \
    X(rv_frustum_classify_sphere_masked)                                                   \
    X(rv_frustum_classify_box)                                                             \
    X(rv_cull_spheres)                                                                     \
    X(rv_cull_spheres_soa)                                                                 \
    /* scene: tests/hostile/scene.c */                                                     \
    X(rv_node_create)                                                                      \
    X(rv_node_destroy_subtree)                                                             \
    X(rv_node_destroy_reroot)                                                              \
    X(rv_node_attach)                                                                      \
    X(rv_node_detach)                                                                      \
    X(rv_node_set_position)                                                                \
    X(rv_node_set_scale)                                                                   \
    X(rv_node_set_rotation)                                                                \
    X(rv_node_set_rotation_axis_angle)                                                     \
    X(rv_node_get_transform)                                                               \
    X(rv_node_transform_ptrs)                                                              \
    X(rv_node_mark_moved)                                                                  \
    X(rv_node_set_bounds)                                                                  \
    X(rv_node_set_flags)                                                                   \
    X(rv_node_get_flags)                                                                   \
    X(rv_node_set_local_matrix)                                                            \
    X(rv_node_get_local_matrix)                                                            \
    X(rv_node_set_key)                                                                     \
    X(rv_node_get_key)                                                                     \
    X(rv_update_world)                                                                     \
    X(rv_node_world_matrix)                                                                \
    X(rv_node_world_bounds)                                                                \
    X(rv_node_parent)                                                                      \
    X(rv_node_first_child)                                                                 \
    X(rv_node_next_sibling)                                                                \
    X(rv_world_first_root)                                                                 \
    X(rv_node_is_valid)                                                                    \
    X(rv_world_scene_stats)                                                                \
    /* cull: tests/hostile/cull.c */                                                       \
    X(rv_visit_visible)                                                                    \
    X(rv_collect_visible)                                                                  \
    X(rv_group_spatially)                                                                  \
    /* lod and hlod: tests/hostile/lod.c */                                                \
    X(rv_lod_ladder_make)                                                                  \
    X(rv_lod_for_sphere)                                                                   \
    X(rv_lod_select_spheres)                                                               \
    X(rv_lod_selector_update)                                                              \
    X(rv_lod_set_desc)                                                                     \
    X(rv_lod_get_desc)                                                                     \
    X(rv_lod_for_node)                                                                     \
    X(rv_node_set_lod_ladder)                                                              \
    X(rv_node_get_lod_ladder)                                                              \
    X(rv_lod_advance)                                                                      \
    X(rv_node_lod_select)                                                                  \
    X(rv_node_set_hlod_region)                                                             \
    X(rv_node_clear_hlod_region)                                                           \
    X(rv_node_set_hlod_resident)                                                           \
    X(rv_hlod_select)                                                                      \
    X(rv_hlod_children)                                                                    \
    /* journal and render scene: tests/hostile/journal.c */                                \
    X(rv_journal_create)                                                                   \
    X(rv_journal_destroy)                                                                  \
    X(rv_journal_claim_thread)                                                             \
    X(rv_journal_register)                                                                 \
    X(rv_journal_update_transform)                                                         \
    X(rv_journal_update_appearance)                                                        \
    X(rv_journal_update_flags)                                                             \
    X(rv_journal_rebucket)                                                                 \
    X(rv_journal_unregister)                                                               \
    X(rv_journal_clear_generation)                                                         \
    X(rv_journal_append)                                                                   \
    X(rv_journal_pending)                                                                  \
    X(rv_journal_get_stats)                                                                \
    X(rv_journal_get_memory)                                                               \
    X(rv_journal_alloc_stats)                                                              \
    X(rv_render_scene_create)                                                              \
    X(rv_render_scene_destroy)                                                             \
    X(rv_render_scene_apply)                                                               \
    X(rv_render_scene_apply_deltas)                                                        \
    X(rv_render_scene_publish)                                                             \
    X(rv_render_scene_find)                                                                \
    X(rv_render_scene_read)                                                                \
    X(rv_render_scene_slot_limit)                                                          \
    X(rv_render_scene_index)                                                               \
    X(rv_render_scene_cell)                                                                \
    X(rv_render_scene_counts)                                                              \
    X(rv_render_scene_digest)                                                              \
    X(rv_render_scene_node_key)                                                            \
    X(rv_render_scene_get_stats)                                                           \
    X(rv_render_scene_get_memory)                                                          \
    X(rv_render_scene_alloc_stats)                                                         \
    /* occlusion: tests/hostile/occlusion.c */                                             \
    X(rv_occlusion_create)                                                                 \
    X(rv_occlusion_destroy)                                                                \
    X(rv_occlusion_begin)                                                                  \
    X(rv_occlusion_add_occluder)                                                           \
    X(rv_occlusion_add_convex)                                                             \
    X(rv_occlusion_add_mesh)                                                               \
    X(rv_occlusion_freeze)                                                                 \
    X(rv_occlusion_test_box)                                                               \
    X(rv_occlusion_test_sphere)                                                            \
    X(rv_occlusion_test_boxes)                                                             \
    X(rv_occlusion_test_spheres)                                                           \
    X(rv_occlusion_get_stats)                                                              \
    X(rv_occlusion_alloc_stats)                                                            \
    X(rv_occlusion_level_count)                                                            \
    X(rv_occlusion_debug_image)                                                            \
    X(rv_occlusion_debug_depth_range)                                                      \
    X(rv_occlusion_feed_depth)                                                             \
    X(rv_occlusion_get_feed_stats)                                                         \
    /* frame and the world's joins: tests/hostile/frame.c */                               \
    X(rv_frame_begin)                                                                      \
    X(rv_frame_add_occluder)                                                               \
    X(rv_frame_feed_depth)                                                                 \
    X(rv_frame_add_convex)                                                                 \
    X(rv_frame_add_mesh)                                                                   \
    X(rv_frame_cull)                                                                       \
    X(rv_frame_end)                                                                        \
    X(rv_frame_abort)                                                                      \
    X(rv_frame)                                                                            \
    X(rv_frame_view_is_valid)                                                              \
    X(rv_frame_view_digest)                                                                \
    X(rv_node_set_occluder_box)                                                            \
    X(rv_node_clear_occluder_box)                                                          \
    X(rv_node_set_occluder_convex)                                                         \
    X(rv_node_set_occluder_mesh)                                                           \
    X(rv_node_clear_occluder)                                                              \
    X(rv_node_set_test_box)                                                                \
    X(rv_node_clear_test_box)                                                              \
    X(rv_world_journal)                                                                    \
    X(rv_world_render_scene)                                                               \
    X(rv_world_add_grid)                                                                   \
    X(rv_world_set_stream_sources)                                                         \
    X(rv_world_residency)                                                                  \
    X(rv_world_occlusion)                                                                  \
    X(rv_world_set_occlusion)                                                              \
    X(rv_view_list_create)                                                                 \
    X(rv_view_list_destroy)                                                                \
    X(rv_cull_view)                                                                        \
    /* partition: tests/hostile/partition.c */                                             \
    X(rv_partition_make_group)                                                             \
    X(rv_partition_set_part)                                                               \
    X(rv_partition_remove)                                                                 \
    X(rv_partition_set_view_version)                                                       \
    X(rv_partition_view_version)                                                           \
    X(rv_partition_leaf_committed)                                                         \
    X(rv_partition_leaf_dropped)                                                           \
    X(rv_partition_set_committed_slice)                                                    \
    X(rv_partition_clear_committed_slice)                                                  \
    X(rv_partition_begin_frame)                                                            \
    X(rv_partition_gate_group)                                                             \
    X(rv_partition_group_hidden)                                                           \
    X(rv_partition_end_frame)                                                              \
    X(rv_partition_is_group)                                                               \
    X(rv_partition_part_get_info)                                                          \
    X(rv_partition_part_frustum_visible)                                                   \
    X(rv_partition_node_hidden)                                                            \
    /* grid and residency: tests/hostile/streaming.c */                                    \
    X(rv_residency_create)                                                                 \
    X(rv_residency_destroy)                                                                \
    X(rv_residency_begin_frame)                                                            \
    X(rv_residency_request)                                                                \
    X(rv_residency_take_requests)                                                          \
    X(rv_residency_place)                                                                  \
    X(rv_residency_fail)                                                                   \
    X(rv_residency_refresh)                                                                \
    X(rv_residency_take_evictions)                                                         \
    X(rv_residency_set_budget)                                                             \
    X(rv_residency_page_info)                                                              \
    X(rv_residency_get_stats)                                                              \
    X(rv_residency_next_wake_ms)                                                           \
    X(rv_residency_loads_in_flight)                                                        \
    X(rv_residency_alloc_stats)                                                            \
    X(rv_grid_create)                                                                      \
    X(rv_grid_destroy)                                                                     \
    X(rv_grid_get_desc)                                                                    \
    X(rv_grid_key_of)                                                                      \
    X(rv_grid_cell_of)                                                                     \
    X(rv_grid_bounds_of)                                                                   \
    X(rv_grid_distance_to)                                                                 \
    X(rv_grid_update)                                                                      \
    X(rv_grid_get_stats)

/* Public functions that take no input a host could get wrong, so they have no hostile
 * case. Each entry says why. (rv_result_string is not here: it gets out-of-range values.) */
#define RVH_EXEMPT(X)                                                                      \
    X(rv_version, "takes no arguments; test_core checks it against the header's macros")

#endif
