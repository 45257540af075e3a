/* device.c - the Vulkan loader (through volk), the instance with optional validation, physical
 * device enumeration and capabilities, device choice, the logical device and its compute queue. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk.h"

// --- results -------------------------------------------------------------------------------

// clang-format off
const char *vkllm__vk_result_str(VkResult r) {
    switch (r) {
#define R(x) \
    case x: return #x;
        R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
        R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED)
        R(VK_ERROR_LAYER_NOT_PRESENT) R(VK_ERROR_EXTENSION_NOT_PRESENT)
        R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER)
        R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED)
        R(VK_ERROR_FRAGMENTED_POOL) R(VK_ERROR_OUT_OF_POOL_MEMORY)
        R(VK_ERROR_INVALID_EXTERNAL_HANDLE) R(VK_ERROR_FRAGMENTATION)
        R(VK_ERROR_UNKNOWN) R(VK_PIPELINE_COMPILE_REQUIRED)
#undef R
    default: return "VkResult(?)";
    }
}
// clang-format on

vkllm_status vkllm__vk_status(VkResult r, const char *call, const char *file, int line) {
    vkllm_status s;
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: s = VKLLM_STATUS_OOM; break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_OUT_OF_POOL_MEMORY: s = VKLLM_STATUS_DEVICE_OOM; break;
    case VK_ERROR_DEVICE_LOST: s = VKLLM_STATUS_DEVICE_LOST; break;
    case VK_ERROR_INCOMPATIBLE_DRIVER: s = VKLLM_STATUS_NO_DEVICE; break;
    default: s = VKLLM_STATUS_VULKAN; break;
    }
    const char *base = strrchr(file, '/');
    return vkllm__err(s, "%s:%d: %.*s failed: %s", base ? base + 1 : file, line, (int)strcspn(call, "("), call,
                      vkllm__vk_result_str(r));
}

// --- loader --------------------------------------------------------------------------------

/* volk's function pointers are process-wide: the loader's global ones (volkInitialize) and the
 * instance-level ones (volkLoadInstanceOnly). Both are set once, under this lock, so that
 * contexts and device listings on several threads never write them while another calls through
 * them. The instance-level ones are the loader's trampolines, which serve every instance; the
 * debug-utils functions, which the loader only gives an instance that enabled the extension, are
 * fetched per instance (struct vkllm__gpu). Device-level calls go through per-device tables. */
static pthread_mutex_t g_loader_mu = PTHREAD_MUTEX_INITIALIZER;

/* Load the Vulkan loader once per process (g_loader_mu held). VKLLM_VULKAN_LIBRARY names another
 * library file (for tests and unusual installs); otherwise volk looks for the system's libvulkan. */
static vkllm_status load_vulkan_locked(void) {
    static int loaded; /* 1 ok, -1 failed */
    static char fail_msg[512];
    if (loaded == 1) return VKLLM_STATUS_OK;
    if (loaded == -1) return vkllm__err(VKLLM_STATUS_NO_VULKAN, "%s", fail_msg);
    const char *lib = vkllm__env_vulkan_library();
    if (lib) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        void *gipa = h ? dlsym(h, "vkGetInstanceProcAddr") : NULL;
        if (!gipa) {
            snprintf(fail_msg, sizeof fail_msg, "cannot load the Vulkan loader '%s' (VKLLM_VULKAN_LIBRARY): %s", lib,
                     h ? "no vkGetInstanceProcAddr in it" : dlerror());
            if (h) dlclose(h);
            loaded = -1;
            return vkllm__err(VKLLM_STATUS_NO_VULKAN, "%s", fail_msg);
        }
        volkInitializeCustom((PFN_vkGetInstanceProcAddr)gipa);
    } else if (volkInitialize() != VK_SUCCESS) {
        snprintf(fail_msg, sizeof fail_msg,
                 "cannot load the Vulkan loader (libvulkan.so.1): install a Vulkan driver and "
                 "loader (Debian: libvulkan1 mesa-vulkan-drivers)");
        loaded = -1;
        return vkllm__err(VKLLM_STATUS_NO_VULKAN, "%s", fail_msg);
    }
    loaded = 1;
    return VKLLM_STATUS_OK;
}

static vkllm_status load_vulkan(void) {
    pthread_mutex_lock(&g_loader_mu);
    vkllm_status st = load_vulkan_locked();
    pthread_mutex_unlock(&g_loader_mu);
    return st;
}

/* Instances and devices are made and destroyed one at a time (g_loader_mu): the loader's own
 * bookkeeping is not safe against another thread doing the same (test_vk's four threads opening
 * and closing devices crashed inside libvulkan's vkGetDeviceProcAddr, 1 run in 5 under ASan). */
static VkResult create_instance_locked(const VkInstanceCreateInfo *ci, VkInstance *inst) {
    pthread_mutex_lock(&g_loader_mu);
    VkResult r = vkCreateInstance(ci, NULL, inst);
    pthread_mutex_unlock(&g_loader_mu);
    return r;
}

static void destroy_instance_locked(VkInstance inst) {
    pthread_mutex_lock(&g_loader_mu);
    vkDestroyInstance(inst, NULL);
    pthread_mutex_unlock(&g_loader_mu);
}

/* The instance-level functions, from the first instance created (see g_loader_mu). */
static void load_instance_functions(VkInstance inst) {
    static int done;
    pthread_mutex_lock(&g_loader_mu);
    if (!done) volkLoadInstanceOnly(inst), done = 1;
    pthread_mutex_unlock(&g_loader_mu);
}

// --- instance ------------------------------------------------------------------------------

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                               VkDebugUtilsMessageTypeFlagsEXT type,
                                               const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    struct vkllm__gpu *gpu = user;
    vkllm_log_level lvl = VKLLM_LOG_DEBUG;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) lvl = VKLLM_LOG_ERROR;
    else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) lvl = VKLLM_LOG_WARN;
    else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT) lvl = VKLLM_LOG_INFO;
    /* Only the validation layer's findings count (tests fail on them); a driver's own general
     * messages (Mesa 25's lavapipe warns about texel-buffer image types) are logged, not counted. */
    int validation = (type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) != 0;
    if (lvl >= VKLLM_LOG_WARN && gpu && validation) gpu->validation_count++;
    vkllm__log(lvl, "%s: %s", validation ? "validation" : "driver",
               data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

/* Whether the loader lists the layer; *n_listed: how many it lists (0 under Wine: winevulkan lists none). */
static int has_layer(const char *name, uint32_t *n_listed) {
    uint32_t n = 0;
    *n_listed = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    *n_listed = n;
    VkLayerProperties *p = vkllm__calloc(n, sizeof *p);
    if (!p) return 0;
    int found = 0;
    if (vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(p[i].layerName, name)) found = 1;
    vkllm__free(p);
    return found;
}

/* Whether the environment's VK_INSTANCE_LAYERS (a list separated by ':' on POSIX, ';' on Windows)
 * names the layer: the loader then inserts it whether or not the instance names it. */
static int env_inserts_layer(const char *name) {
    const char *v = getenv("VK_INSTANCE_LAYERS");
    size_t n = strlen(name);
    for (const char *p = v; p && *p;) {
        size_t len = strcspn(p, ":;");
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len;
        if (*p) p++;
    }
    return 0;
}

static int has_instance_ext(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *p = vkllm__calloc(n, sizeof *p);
    if (!p) return 0;
    int found = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(p[i].extensionName, name)) found = 1;
    vkllm__free(p);
    return found;
}

static const char validation_layer[] = "VK_LAYER_KHRONOS_validation";

/* The validation layer left to the loader to insert: whether it runs in inst, as it says through
 * VK_EXT_tooling_info (a tool with the validation purpose). UNSUPPORTED when it does not; where the
 * question cannot be asked, a warning. */
static vkllm_status layer_runs(VkInstance inst) {
    PFN_vkGetPhysicalDeviceToolPropertiesEXT tools = (PFN_vkGetPhysicalDeviceToolPropertiesEXT)vkGetInstanceProcAddr(
        inst, "vkGetPhysicalDeviceToolPropertiesEXT"); /* the layer offers it; core in Vulkan 1.3 */
    if (!tools)
        tools =
            (PFN_vkGetPhysicalDeviceToolPropertiesEXT)vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceToolProperties");
    uint32_t n_pd = 1, n = 8;
    VkPhysicalDevice pd;
    VkPhysicalDeviceToolProperties tp[8];
    for (uint32_t i = 0; i < n; i++)
        tp[i] = (VkPhysicalDeviceToolProperties){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES};
    VkResult r = vkEnumeratePhysicalDevices(inst, &n_pd, &pd);
    if (!tools || (r != VK_SUCCESS && r != VK_INCOMPLETE) || !n_pd ||
        ((r = tools(pd, &n, tp)) != VK_SUCCESS && r != VK_INCOMPLETE)) {
        vkllm__log(VKLLM_LOG_WARN,
                   "validation: %s is left to the Vulkan loader to insert (not listed%s), and whether it runs "
                   "cannot be asked (no VK_EXT_tooling_info)",
                   validation_layer, env_inserts_layer(validation_layer) ? "; VK_INSTANCE_LAYERS names it" : "");
        return VKLLM_STATUS_OK;
    }
    for (uint32_t i = 0; i < n; i++)
        if (tp[i].purposes & VK_TOOL_PURPOSE_VALIDATION_BIT) {
            vkllm__log(VKLLM_LOG_INFO, "validation: %s runs, inserted by the Vulkan loader (%s)", validation_layer,
                       tp[i].name);
            return VKLLM_STATUS_OK;
        }
    return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                      "validation asked for (VKLLM_VALIDATE=1) but %s does not run: the Vulkan loader does not "
                      "list it, and no validation tool runs in the instance. Install the layer (Debian: "
                      "vulkan-validationlayers; Windows: the Vulkan SDK); where the loader lists no layers (Wine), "
                      "have the host's loader insert it: VK_INSTANCE_LAYERS=%s in the host's environment",
                      validation_layer, validation_layer);
}

/* Create an instance (a Vulkan 1.1 loader or newer). With validate, enable VK_LAYER_KHRONOS_validation with
 * synchronization validation and route its messages through debug_cb (counted in gpu). */
static vkllm_status create_instance(int validate, struct vkllm__gpu *gpu, VkInstance *out,
                                    VkDebugUtilsMessengerEXT *messenger) {
    vkllm_status st = load_vulkan();
    if (st) return st;
    uint32_t api = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1)
        return vkllm__err(VKLLM_STATUS_NO_DEVICE, "the Vulkan loader supports only Vulkan %u.%u; vkllm needs 1.1",
                          VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));

    const char *layers[1];
    uint32_t n_layers = 0;
    int inserted = 0; /* validation by a layer the loader inserts (not named here) */
    const char *exts[3];
    uint32_t n_exts = 0;
    VkInstanceCreateFlags flags = 0;
    if (has_instance_ext(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[n_exts++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME; /* MoltenVK */
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    int debug_utils = 0;
    if (validate) {
        /* Named when the loader lists it. Under Wine, winevulkan lists no layers and refuses an
         * instance that names one, but the host's loader inserts the layers that the host's
         * VK_INSTANCE_LAYERS names (docs/platforms.md; Wine hides VK_* variables from Windows
         * programs): where the loader lists none, or VK_INSTANCE_LAYERS names it, it is left to
         * the loader, and the instance checks that it runs (layer_runs). */
        uint32_t n_listed;
        if (has_layer(validation_layer, &n_listed)) {
            layers[n_layers++] = validation_layer;
        } else if (n_listed && !env_inserts_layer(validation_layer)) {
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                              "validation asked for (VKLLM_VALIDATE=1) but the Vulkan loader lists no %s: "
                              "install it (Debian: vulkan-validationlayers; Windows: the Vulkan SDK)",
                              validation_layer);
        } else {
            inserted = 1;
        }
        if (has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
            exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
            debug_utils = 1;
        }
    }
    VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
    };
    VkValidationFeaturesEXT vfeat = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = VKLLM_ARRAY_LEN(enables),
        .pEnabledValidationFeatures = enables,
    };
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = validate ? &vfeat : NULL,
        .messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = debug_cb,
        .pUserData = gpu,
    };
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "vkllm",
        .pEngineName = "vkllm",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = debug_utils ? (void *)&dbg : (validate ? (void *)&vfeat : NULL),
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    VkInstance inst;
    VKLLM_VK_TRY(st, create_instance_locked(&ci, &inst), fail);
    load_instance_functions(inst);
    if (inserted && (st = layer_runs(inst)) != VKLLM_STATUS_OK) goto fail_inst;
    *messenger = VK_NULL_HANDLE;
    if (debug_utils) {
        dbg.pNext = NULL;
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkCreateDebugUtilsMessengerEXT");
        if (gpu) {
            gpu->destroy_messenger =
                (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkDestroyDebugUtilsMessengerEXT");
            gpu->submit_message =
                (PFN_vkSubmitDebugUtilsMessageEXT)vkGetInstanceProcAddr(inst, "vkSubmitDebugUtilsMessageEXT");
        }
        if (!create || (gpu && !gpu->destroy_messenger)) {
            st = vkllm__err(VKLLM_STATUS_VULKAN, "VK_EXT_debug_utils is enabled but its functions are missing");
            goto fail_inst;
        }
        VKLLM_VK_TRY(st, create(inst, &dbg, NULL, messenger), fail_inst);
    }
    *out = inst;
    return VKLLM_STATUS_OK;
fail_inst:
    destroy_instance_locked(inst);
fail:
    if (st == VKLLM_STATUS_NO_DEVICE || st == VKLLM_STATUS_VULKAN)
        vkllm__err_prefix("no Vulkan driver could be initialized (is a driver installed? "
                          "Debian: mesa-vulkan-drivers): ");
    return st == VKLLM_STATUS_VULKAN ? VKLLM_STATUS_NO_DEVICE : st;
}

// --- capabilities --------------------------------------------------------------------------

const char *vkllm__vk_vendor_name(uint32_t id) {
    switch (id) {
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x13b5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x1010: return "ImgTec";
    case 0x106b: return "Apple";
    case 0x14e4: return "Broadcom";
    case 0x10005: return "Mesa";
    case 0x19e5: return "Huawei";
    case 0x1d17: return "Zhaoxin";
    default: return "unknown";
    }
}

static int has_device_ext(VkExtensionProperties *exts, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(exts[i].extensionName, name)) return 1;
    return 0;
}

/* Fill info from a physical device. Also returns (optionally) the device extensions. */
static vkllm_status query_device(VkInstance inst, VkPhysicalDevice pd, uint32_t index, struct vkllm_device_info *info) {
    memset(info, 0, sizeof *info);
    info->index = index;

    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, NULL);
    VkExtensionProperties *exts = vkllm__calloc(n_ext ? n_ext : 1, sizeof *exts);
    if (!exts) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory listing device extensions");
    if (n_ext) vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, exts);
    int has_coopmat = has_device_ext(exts, n_ext, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    int has_dot = has_device_ext(exts, n_ext, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    int has_sgsc = has_device_ext(exts, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    int has_pep = has_device_ext(exts, n_ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    info->memory_budget = has_device_ext(exts, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

    VkPhysicalDeviceProperties props0;
    vkGetPhysicalDeviceProperties(pd, &props0);

    /* properties chain */
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    int has_drv = props0.apiVersion >= VK_API_VERSION_1_2 || has_device_ext(exts, n_ext, "VK_KHR_driver_properties");
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                             .pNext = has_drv ? &drv : NULL};
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sgsc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT, .pNext = &sg};
    VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR dotp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
    void *chain = &sg;
    int sgsc_queried = has_sgsc || props0.apiVersion >= VK_API_VERSION_1_3;
    if (sgsc_queried) chain = &sgsc;
    if (has_dot) {
        dotp.pNext = chain;
        chain = &dotp;
    }
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = chain};
    vkGetPhysicalDeviceProperties2(pd, &props);
    const VkPhysicalDeviceLimits *lim = &props.properties.limits;

    /* features chain */
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dotf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = {.sType = VKLLM_STYPE_COOPMAT_FEATURES_KHR};
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sgscf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    /* the 1.1 and 1.2 feature structs exist on Vulkan 1.2 devices only; a 1.1 device reports
     * none of those optional features here */
    void *fchain = props0.apiVersion >= VK_API_VERSION_1_2 ? &f11 : NULL;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pepf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    if (has_pep) {
        pepf.pNext = fchain;
        fchain = &pepf;
    }
    if (has_sgsc) {
        sgscf.pNext = fchain;
        fchain = &sgscf;
    }
    if (has_dot) {
        dotf.pNext = fchain;
        fchain = &dotf;
    }
    if (has_coopmat) {
        cmf.pNext = fchain;
        fchain = &cmf;
    }
    VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = fchain};
    vkGetPhysicalDeviceFeatures2(pd, &feats);

    snprintf(info->name, sizeof info->name, "%s", props.properties.deviceName);
    info->vendor_id = props.properties.vendorID;
    snprintf(info->vendor, sizeof info->vendor, "%s", vkllm__vk_vendor_name(info->vendor_id));
    info->device_id = props.properties.deviceID;
    switch (props.properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->type = VKLLM_DEVICE_INTEGRATED_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->type = VKLLM_DEVICE_DISCRETE_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->type = VKLLM_DEVICE_VIRTUAL_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->type = VKLLM_DEVICE_CPU; break;
    default: info->type = VKLLM_DEVICE_OTHER; break;
    }
    snprintf(info->driver_name, sizeof info->driver_name, "%s", drv.driverName);
    snprintf(info->driver_info, sizeof info->driver_info, "%s", drv.driverInfo);
    info->driver_version = props.properties.driverVersion;
    info->api_version = props.properties.apiVersion;

    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    /* A device without memory types (RADV's null hardware) is not asked for a budget: Mesa 25's
     * null GFX12 calls a missing function there. */
    VkPhysicalDeviceMemoryProperties mp1;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp1);
    if (!mp1.memoryTypeCount) info->memory_budget = 0;
    VkPhysicalDeviceMemoryProperties2 mp2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                             .pNext = info->memory_budget ? &budget : NULL};
    vkGetPhysicalDeviceMemoryProperties2(pd, &mp2);
    const VkPhysicalDeviceMemoryProperties mp = mp2.memoryProperties;
    info->heap_count = VKLLM_MIN(mp.memoryHeapCount, VKLLM_MAX_HEAPS);
    for (uint32_t i = 0; i < info->heap_count; i++) {
        info->heap_size[i] = mp.memoryHeaps[i].size;
        info->heap_device_local[i] = !!(mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
        if (info->memory_budget) info->heap_budget[i] = budget.heapBudget[i], info->heap_usage[i] = budget.heapUsage[i];
    }
    info->memory_type_count = VKLLM_MIN(mp.memoryTypeCount, VKLLM_MAX_MEMORY_TYPES);
    for (uint32_t i = 0; i < info->memory_type_count; i++) {
        info->memory_types[i].flags = mp.memoryTypes[i].propertyFlags & 0xf;
        info->memory_types[i].heap = mp.memoryTypes[i].heapIndex;
        uint32_t dl_hv = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
        if ((mp.memoryTypes[i].propertyFlags & dl_hv) == dl_hv) info->unified_memory = 1;
    }
    /* Unified memory is what integrated and CPU devices have. A discrete GPU's host-visible
     * device-local memory (a BAR window, or all of VRAM with resizable BAR) is reached over the bus:
     * weights and activations stay in plain device-local memory there, uploaded through staging. */
    if (info->type != VKLLM_DEVICE_INTEGRATED_GPU && info->type != VKLLM_DEVICE_CPU) info->unified_memory = 0;

    info->subgroup_size = sg.subgroupSize;
    if (sgsc_queried) {
        info->subgroup_size_min = sgsc.minSubgroupSize;
        info->subgroup_size_max = sgsc.maxSubgroupSize;
    }
    /* A compute pipeline may ask for a subgroup size in [min, max] and full subgroups (the
     * extension is what vkllm enables: it runs on Vulkan 1.1). */
    info->subgroup_size_control = has_sgsc && sgscf.subgroupSizeControl && sgscf.computeFullSubgroups &&
                                  (sgsc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                  sgsc.minSubgroupSize > 0;
    info->subgroup_ops = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sg.supportedOperations & 0xff : 0;
    info->fp16_arith = !!f12.shaderFloat16;
    info->int8_arith = !!f12.shaderInt8;
    VkPhysicalDeviceFeatures f10;
    vkGetPhysicalDeviceFeatures(pd, &f10);
    info->int64_arith = !!f10.shaderInt64;
    info->storage_16bit = !!f11.storageBuffer16BitAccess;
    info->storage_8bit = !!f12.storageBuffer8BitAccess;
    info->integer_dot_product = has_dot && dotf.shaderIntegerDotProduct;
    info->integer_dot_product_accel = has_dot && dotp.integerDotProduct4x8BitPackedSignedAccelerated;
    info->buffer_device_address = !!f12.bufferDeviceAddress;
    info->pipeline_statistics = has_pep && pepf.pipelineExecutableInfo;

    /* vkllm's cooperative-matrix shaders use the Vulkan memory model (glslang's NV form, see
     * shaders/coopmat/spv_coopmat.h): usable where that is offered too */
    if (has_coopmat && cmf.cooperativeMatrix && f12.vulkanMemoryModel) {
        PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
            (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
                inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
        uint32_t n = 0;
        if (get && get(pd, &n, NULL) == VK_SUCCESS && n > 0) {
            VkCooperativeMatrixPropertiesKHR *cp = vkllm__calloc(n, sizeof *cp);
            if (cp) {
                for (uint32_t i = 0; i < n; i++) cp[i].sType = VKLLM_STYPE_COOPMAT_PROPERTIES_KHR;
                if (get(pd, &n, cp) == VK_SUCCESS) {
                    info->cooperative_matrix = 1;
                    for (uint32_t i = 0; i < n && info->coopmat_shape_count < VKLLM_MAX_COOPMAT_SHAPES; i++) {
                        if (cp[i].scope != 3 /* VK_SCOPE_SUBGROUP_KHR */) continue;
                        struct vkllm_coopmat_shape *s = &info->coopmat_shapes[info->coopmat_shape_count++];
                        s->m = cp[i].MSize, s->n = cp[i].NSize, s->k = cp[i].KSize;
                        s->a_type = cp[i].AType, s->b_type = cp[i].BType;
                        s->c_type = cp[i].CType, s->result_type = cp[i].ResultType;
                    }
                }
                vkllm__free(cp);
            }
        }
    }

    info->max_storage_buffer_range = lim->maxStorageBufferRange;
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info->max_memory_allocation_size = m3.maxMemoryAllocationSize;
    info->min_storage_buffer_offset_alignment = lim->minStorageBufferOffsetAlignment;
    info->min_texel_buffer_offset_alignment = lim->minTexelBufferOffsetAlignment;
    info->min_uniform_buffer_offset_alignment = lim->minUniformBufferOffsetAlignment;
    info->max_shared_memory = lim->maxComputeSharedMemorySize;
    info->max_texel_buffer_elements = lim->maxTexelBufferElements;
    info->max_uniform_buffer_range = lim->maxUniformBufferRange;
    info->max_workgroup_invocations = lim->maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        info->max_workgroup_size[i] = lim->maxComputeWorkGroupSize[i];
        info->max_workgroup_count[i] = lim->maxComputeWorkGroupCount[i];
    }
    info->max_push_constants = lim->maxPushConstantsSize;
    info->timestamp_period_ns = lim->timestampPeriod;

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *q = vkllm__calloc(nq ? nq : 1, sizeof *q);
    if (!q) {
        vkllm__free(exts);
        return vkllm__err(VKLLM_STATUS_OOM, "out of host memory listing queue families");
    }
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
    for (uint32_t i = 0; i < nq; i++) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (!info->has_compute_queue || (!(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))) {
            info->has_compute_queue = 1;
            info->timestamp_valid_bits = q[i].timestampValidBits;
        }
    }
    info->timestamps = info->timestamp_valid_bits > 0 && lim->timestampComputeAndGraphics;
    vkllm__free(q);
    vkllm__free(exts);
    return VKLLM_STATUS_OK;
}

/* vkllm runs on it: Vulkan 1.1, a compute queue and somewhere to put buffers. */
static int usable(const struct vkllm_device_info *d) {
    return d->has_compute_queue && d->api_version >= VK_API_VERSION_1_1 && d->memory_type_count > 0;
}

static vkllm_status physical_devices(VkInstance inst, VkPhysicalDevice **out, uint32_t *count) {
    vkllm_status st = VKLLM_STATUS_OK;
    uint32_t n = 0;
    VKLLM_VK_TRY(st, vkEnumeratePhysicalDevices(inst, &n, NULL), fail);
    VkPhysicalDevice *pd = vkllm__calloc(n ? n : 1, sizeof *pd);
    if (!pd) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory listing devices");
    if (n) {
        VkResult r = vkEnumeratePhysicalDevices(inst, &n, pd);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
            vkllm__free(pd);
            return vkllm__vk_status(r, "vkEnumeratePhysicalDevices", __FILE__, __LINE__);
        }
    }
    *out = pd;
    *count = n;
    return VKLLM_STATUS_OK;
fail:
    return st;
}

vkllm_status vkllm__gpu_list(struct vkllm_device_info **out, uint32_t *count) {
    VkInstance inst;
    VkDebugUtilsMessengerEXT msg;
    vkllm_status st = create_instance(0, NULL, &inst, &msg);
    if (st) return st;
    VkPhysicalDevice *pd = NULL;
    uint32_t n = 0;
    struct vkllm_device_info *infos = NULL;
    VKLLM_TRY(st, physical_devices(inst, &pd, &n), done);
    infos = vkllm__calloc(n ? n : 1, sizeof *infos);
    if (!infos) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory listing devices");
        goto done;
    }
    struct vkllm__tuning t; /* the device profile (VKLLM_DEVICE_PROFILE) clamps what is listed */
    VKLLM_TRY(st, vkllm__tuning_from_env(&t), done);
    for (uint32_t i = 0; i < n; i++) {
        VKLLM_TRY(st, query_device(inst, pd[i], i, &infos[i]), done);
        VKLLM_TRY(st, vkllm__profile_apply(t.device_profile, &infos[i]), done);
        infos[i].usable = usable(&infos[i]);
    }
    *out = infos;
    *count = n;
    infos = NULL;
done:
    vkllm__free(infos);
    vkllm__free(pd);
    destroy_instance_locked(inst);
    return st;
}

// --- device choice -------------------------------------------------------------------------

static int type_rank(vkllm_device_type t) {
    switch (t) {
    case VKLLM_DEVICE_DISCRETE_GPU: return 0;
    case VKLLM_DEVICE_INTEGRATED_GPU: return 1;
    case VKLLM_DEVICE_VIRTUAL_GPU: return 2;
    case VKLLM_DEVICE_CPU: return 3;
    default: return 4;
    }
}

/* The device to open: the index want (>= 0: given, or the tuning's VKLLM_DEVICE), else the first
 * usable device of the best type (discrete, integrated, virtual, CPU, other). */
/* Whether a context can open d: usable, or compile-only where d has no memory. */
static int can_open(const struct vkllm_device_info *d, int compile_only) {
    return d->usable || (compile_only && d->has_compute_queue && d->api_version >= VK_API_VERSION_1_1);
}

static vkllm_status choose_device(const struct vkllm_device_info *infos, uint32_t n, int want, int compile_only,
                                  uint32_t *out) {
    if (n == 0)
        return vkllm__err(VKLLM_STATUS_NO_DEVICE, "the Vulkan loader found no device (is a driver installed? Debian: "
                                                  "mesa-vulkan-drivers)");
    if (want >= 0) {
        if ((uint32_t)want >= n)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "device %d does not exist: there %s %u device%s (0..%u)",
                              want, n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n - 1);
        const struct vkllm_device_info *d = &infos[want];
        if (!can_open(d, compile_only))
            return vkllm__err(VKLLM_STATUS_NO_DEVICE,
                              "device %d (%s) cannot run vkllm: it needs Vulkan 1.1, a compute queue%s", want, d->name,
                              d->memory_type_count ? ""
                                                   : " and memory (it has none: it can only build "
                                                     "pipelines, vkllm pipelines)");
        *out = (uint32_t)want;
        return VKLLM_STATUS_OK;
    }
    int best = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!can_open(&infos[i], compile_only)) continue;
        if (best < 0 || type_rank(infos[i].type) < type_rank(infos[best].type)) best = (int)i;
    }
    if (best < 0)
        return vkllm__err(VKLLM_STATUS_NO_DEVICE,
                          "none of the %u Vulkan device%s supports Vulkan 1.1 with a compute queue%s", n,
                          n == 1 ? "" : "s", compile_only ? "" : " and has memory");
    *out = (uint32_t)best;
    return VKLLM_STATUS_OK;
}

// --- logical device ------------------------------------------------------------------------

/* Put the feature struct s (any Vk*Features struct) at the head of en's pNext chain. */
static void chain_feature(VkPhysicalDeviceFeatures2 *en, void *s) {
    VkBaseOutStructure *b = s;
    b->pNext = en->pNext;
    en->pNext = b;
}

static vkllm_status create_device(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    const struct vkllm_device_info *info = &gpu->info;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(gpu->phys, &nq, NULL);
    VkQueueFamilyProperties *q = vkllm__calloc(nq ? nq : 1, sizeof *q);
    if (!q) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkGetPhysicalDeviceQueueFamilyProperties(gpu->phys, &nq, q);
    int fam = -1;
    for (uint32_t i = 0; i < nq; i++) { /* prefer a compute-only family */
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (fam < 0 || !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) fam = (int)i;
    }
    vkllm__free(q);
    if (fam < 0) return vkllm__err(VKLLM_STATUS_NO_DEVICE, "%s has no compute queue", info->name);
    gpu->queue_family = (uint32_t)fam;

    /* Enable what the shaders use, and nothing else: they need no optional feature (the KV cache
     * packs halves into 32-bit words; no 8/16-bit storage), so a Vulkan 1.1 device runs them.
     * Subgroup size control, the integer dot product, f16 arithmetic and cooperative matrices are
     * chained below where they are offered (the shaders using them run only there). */
    VkPhysicalDeviceFeatures2 en = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = gpu->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    const char *exts[12];
    uint32_t n_exts = 0;
    uint32_t n_avail = 0;
    vkEnumerateDeviceExtensionProperties(gpu->phys, NULL, &n_avail, NULL);
    VkExtensionProperties *avail = vkllm__calloc(n_avail ? n_avail : 1, sizeof *avail);
    if (!avail) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkEnumerateDeviceExtensionProperties(gpu->phys, NULL, &n_avail, avail);
    if (has_device_ext(avail, n_avail, "VK_KHR_portability_subset"))
        exts[n_exts++] = "VK_KHR_portability_subset"; /* required when present (MoltenVK) */
    int has_feedback = has_device_ext(avail, n_avail, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    vkllm__free(avail);
    /* Subgroup reductions ask for their subgroup size with full subgroups where this is offered
     * (ops pick the shared-memory reduction elsewhere when the size could vary). */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sgsc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
        .subgroupSizeControl = VK_TRUE,
        .computeFullSubgroups = VK_TRUE,
    };
    if (info->memory_budget) exts[n_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if (info->subgroup_size_control) {
        exts[n_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
        chain_feature(&en, &sgsc);
    }
    /* the packed int8 dot product of matvec_x8's DOT_HW variants (ops_matvec.c) */
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    if (info->integer_dot_product) {
        exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
        chain_feature(&en, &dot);
    }
    /* f16 arithmetic: the f16 shared-memory tiles of the prefill matmul (ops_matmul.c). Only
     * reported, so only enabled, on Vulkan 1.2 devices, where the struct is core. */
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = VK_TRUE,
    };
    if (info->fp16_arith) chain_feature(&en, &f16);
    /* cooperative matrices: the matmul_cm_<type> prefill kernels (ops_matmul.c), which use the
     * Vulkan memory model (core in 1.2: info->cooperative_matrix is only set on such devices) */
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm = {.sType = VKLLM_STYPE_COOPMAT_FEATURES_KHR,
                                                       .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .vulkanMemoryModel = VK_TRUE};
    if (info->cooperative_matrix) {
        exts[n_exts++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
        chain_feature(&en, &cm);
        chain_feature(&en, &vmm);
    }
    /* compile-only: the driver's statistics of every pipeline (vkllm pipelines), and creation
     * feedback (whether its cache answered) wherever offered */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pep = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    if (gpu->compile_only && info->pipeline_statistics) {
        exts[n_exts++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        chain_feature(&en, &pep);
        gpu->capture_stats = 1;
    }
    /* the extension, also on 1.3 devices: the instance asks for an older API version */
    if (gpu->compile_only && has_feedback) exts[n_exts++] = VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME;
    gpu->creation_feedback = gpu->compile_only && has_feedback;
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &en,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    pthread_mutex_lock(&g_loader_mu); /* see create_instance_locked */
    VkResult dr = vkCreateDevice(gpu->phys, &dci, NULL, &gpu->device);
    if (dr == VK_SUCCESS) volkLoadDeviceTable(&gpu->vk, gpu->device);
    pthread_mutex_unlock(&g_loader_mu);
    VKLLM_VK_TRY(st, dr, fail);
    gpu->vk.vkGetDeviceQueue(gpu->device, gpu->queue_family, 0, &gpu->queue);
    return VKLLM_STATUS_OK;
fail:
    return st;
}

// --- open / close --------------------------------------------------------------------------

vkllm_status vkllm__gpu_open(const struct vkllm__gpu_params *p, struct vkllm__gpu **out) {
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__gpu *gpu = vkllm__calloc(1, sizeof *gpu);
    if (!gpu) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory opening the device");
    VkPhysicalDevice *pd = NULL;
    struct vkllm_device_info *infos = NULL;
    uint32_t n = 0, chosen = 0;
    VKLLM_TRY(st, vkllm__tuning_from_env(&gpu->tuning), fail);
    VKLLM_TRY(st, vkllm__tuning_parse(&gpu->tuning, p ? p->tuning : NULL), fail);
    gpu->validate = p && p->validate >= 0 ? p->validate : gpu->tuning.validate == 1;
    gpu->compile_only = p && p->compile_only;
    int want = p && p->device >= 0 ? p->device : gpu->tuning.device > INT32_MAX ? INT32_MAX : (int)gpu->tuning.device;

    VKLLM_TRY(st, create_instance(gpu->validate, gpu, &gpu->instance, &gpu->messenger), fail);
    VKLLM_TRY(st, physical_devices(gpu->instance, &pd, &n), fail);
    infos = vkllm__calloc(n ? n : 1, sizeof *infos);
    if (!infos) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        VKLLM_TRY(st, query_device(gpu->instance, pd[i], i, &infos[i]), fail);
        VKLLM_TRY(st, vkllm__profile_apply(gpu->tuning.device_profile, &infos[i]), fail);
        infos[i].usable = usable(&infos[i]);
    }
    VKLLM_TRY(st, choose_device(infos, n, want, gpu->compile_only, &chosen), fail);
    gpu->phys = pd[chosen];
    gpu->info = infos[chosen];
    vkGetPhysicalDeviceMemoryProperties(gpu->phys, &gpu->mem_props);
    VKLLM_TRY(st, create_device(gpu), fail);
    if (gpu->info.type == VKLLM_DEVICE_CPU) gpu->cpu_threads = vkllm__env_cpu_device_threads(); /* lavapipe */
    VKLLM_TRY(st, vkllm__mem_init(gpu), fail);
    VKLLM_TRY(st, vkllm__pipeline_cache_load(gpu), fail);
    vkllm__log(VKLLM_LOG_INFO, "device %u: %s (%s, %s)", chosen, gpu->info.name, vkllm_device_type_str(gpu->info.type),
               gpu->info.driver_info);
    vkllm__free(infos);
    vkllm__free(pd);
    *out = gpu;
    return VKLLM_STATUS_OK;
fail:
    vkllm__free(infos);
    vkllm__free(pd);
    vkllm__gpu_close(gpu);
    return st;
}

void vkllm__gpu_close(struct vkllm__gpu *gpu) {
    if (!gpu) return;
    if (gpu->device) {
        /* a device that was never given work is not asked to wait: a failed open, a compile-only
         * context (RADV's null hardware crashes in the wait) */
        if (gpu->submitted) gpu->vk.vkDeviceWaitIdle(gpu->device);
        vkllm__pipeline_cache_save(gpu);
        vkllm__pipelines_free(gpu);
        vkllm__mem_free_all(gpu);
        pthread_mutex_lock(&g_loader_mu);
        gpu->vk.vkDestroyDevice(gpu->device, NULL);
        pthread_mutex_unlock(&g_loader_mu);
    }
    if (gpu->messenger) gpu->destroy_messenger(gpu->instance, gpu->messenger, NULL);
    if (gpu->instance) destroy_instance_locked(gpu->instance);
    vkllm__free(gpu);
}

const struct vkllm_device_info *vkllm__gpu_info(const struct vkllm__gpu *gpu) { return &gpu->info; }

int vkllm__gpu_compile_only(const struct vkllm__gpu *gpu) { return gpu->compile_only; }

const struct vkllm__tuning *vkllm__gpu_tuning(const struct vkllm__gpu *gpu) { return &gpu->tuning; }

void vkllm__gpu_set_tuning(struct vkllm__gpu *gpu, const struct vkllm__tuning *t) {
    gpu->tuning = *t;
    vkllm__mem_apply_tuning(gpu);
}

uint64_t vkllm__gpu_validation_count(const struct vkllm__gpu *gpu) { return gpu->validation_count; }

int vkllm__gpu_validation_probe(struct vkllm__gpu *gpu) {
    if (!gpu->messenger || !gpu->submit_message) return 0;
    uint64_t before = gpu->validation_count;
    VkDebugUtilsMessengerCallbackDataEXT data = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT,
        .pMessageIdName = "vkllm-probe",
        .pMessage = "vkllm validation probe (expected in tests)",
    };
    gpu->submit_message(gpu->instance, VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                        VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, &data);
    int seen = gpu->validation_count == before + 1;
    /* a driver's general message is logged but does not count */
    data.pMessage = "vkllm probe of a driver's general message (expected in tests, not counted)";
    gpu->submit_message(gpu->instance, VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, &data);
    seen = seen && gpu->validation_count == before + 1;
    gpu->validation_count = before;
    return seen;
}

void vkllm__gpu_grid_1d(const struct vkllm__gpu *gpu, uint64_t n, uint32_t wg, uint32_t groups[3]) {
    uint64_t g = (n + wg - 1) / wg;
    uint64_t maxx = gpu->info.max_workgroup_count[0] ? gpu->info.max_workgroup_count[0] : 65535;
    if (g <= maxx) {
        groups[0] = (uint32_t)(g ? g : 1);
        groups[1] = 1;
    } else {
        groups[1] = (uint32_t)((g + maxx - 1) / maxx);
        groups[0] = (uint32_t)((g + groups[1] - 1) / groups[1]);
    }
    groups[2] = 1;
}
